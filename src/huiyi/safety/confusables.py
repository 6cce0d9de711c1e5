"""Characters of other scripts that read as a Latin letter or digit (generated).

Unicode's confusables (TR39, via `confusable_homoglyphs`) for every single character outside
ASCII that reads as one ASCII letter or digit and that NFKC does not fold already, plus
look-alikes TR39 leaves out (small capitals, Cyrillic `н`, Greek `η`). Made by
`python -m tests.confusables_table`; `tests/test_normalise.py` checks it against the data.
"""

from __future__ import annotations

__all__ = ["READS_AS"]

#: Latin letter or digit -> the characters read as it.
READS_AS: dict[str, str] = {
    "2": "ƧϨᒿꙄꛯꝚ",
    "3": "ƷȜЗӠⳌꝪꞫ𑣊𖼻𝈆",
    "4": "Ꮞ𑢯",
    "5": "Ƽ𑢻",
    "6": "бᏮⳒ𑣕",
    "7": "𐓒𑣆𝈒",
    "8": "Ȣȣ৪੪ଃ𐌚",
    "9": "৭੧୨൭ⳊꝮ𑢬𑣌𑣖",
    "A": "ΑАᎪᗅꓮ𐊠𖽀𝚨𝛢𝜜𝝖𝞐",
    "B": "ΒВᏴᗷꓐꞴ𐊂𐊡𐌁𝚩𝛣𝜝𝝗𝞑",
    "C": "ϹСᏟⲤꓚ𐊢𐌂𐐕𐔜𑣩𑣲🝌",
    "D": "Ꭰᗞᗪꓓ",
    "E": "ΕЕᎬ⋿ⴹꓰ𐊆𑢦𑢮𝚬𝛦𝜠𝝚𝞔",
    "F": "ϜᖴꓝꞘ𐊇𐊥𐔥𑢢𑣂𝈓𝟊",
    "G": "ԌᏀᏳꓖ",
    "H": "ΗНᎻᕼⲎꓧ𐋏𝚮𝛨𝜢𝝜𝞖",
    "I": "ƖΙІӀⲒ𝚰𝛪𝜤𝝞𝞘",
    "J": "ͿЈᎫᒍꓙꞲ",
    "K": "ΚКᏦᛕⲔꓗ𐔘𝚱𝛫𝜥𝝟𝞙",
    "L": "ᏞᒪⳐꓡ𐐛𐔦𑢣𑢲𖼖𝈪",
    "M": "ΜϺМᎷᗰᛖⲘꓟ𐊰𐌑𝚳𝛭𝜧𝝡𝞛",
    "N": "ΝⲚꓠ𐔓𝚴𝛮𝜨𝝢𝞜",
    "O": "ΟОՕ০ଠ୦ዐⲞⵔ〇ꓳ𐊒𐊫𐐄𐓂𐔖𑓐𑢵𑣠𝚶𝛰𝜪𝝤𝞞",
    "P": "ΡРᏢᑭⲢꓑ𐊕𝚸𝛲𝜬𝝦𝞠",
    "Q": "ⵕ",
    "R": "ƦᎡᏒᖇꓣ𐒴𖼵𝈖",
    "S": "ЅՏᏕᏚꓢ𐊖𐐠𖼺",
    "T": "ΤТᎢ⊤⟙Ⲧꓔ𐊗𐊱𐌕𑢼𖼊𝚻𝛵𝜯𝝩𝞣🝨",
    "U": "Սሀᑌ∪⋃ꓴ𐓎𑢸𖽂",
    "V": "Ѵ۷Ꮩᐯⴸꓦꛟ𐔝𑢠𖼈𝈍",
    "W": "ԜᎳᏔꓪ𑣦𑣯",
    "X": "ΧХ᙭ᚷ╳ⲬⵝꓫꞳ𐊐𐊴𐌗𐌢𐔧𑣬𝚾𝛸𝜲𝝬𝞦",
    "Y": "ΥϒУҮᎩᎽⲨꓬ𐊲𑢤𖽃𝚼𝛶𝜰𝝪𝞤",
    "Z": "ΖᏃꓜ𐋵𑢩𑣥𝚭𝛧𝜡𝝛𝞕",
    "a": "ɑαаᴀ⍺ⲁ𝛂𝛼𝜶𝝰𝞪",
    "b": "ƄʙЬвᏏᑲᖯ",
    "c": "ϲсᴄⲥꮯ𐐽",
    "d": "ԁᏧᑯᴅꓒ",
    "e": "еҽᴇ℮ⲉꬲ",
    "f": "քẝꞙꬵ",
    "g": "ƍɡɢցᶃ",
    "h": "ʜнһհᏂⲏ",
    "i": "ıɩɪ˛ͺιіӏᎥι⍳ⲓꙇꭵ𑣃𝚤𝛊𝜄𝜾𝝸𝞲",
    "j": "ϳјᴊ",
    "k": "κкᴋ",
    "l": "ǀʟ۱ᛁ∣⏽ⵏꓲ￨𐊊𐌉𐌠𖼨",
    "m": "мᴍ",
    "n": "ɴηոռⲛ",
    "o": "οσоօ۵०੦૦௦ం౦ಂ೦ംഠ൦ං๐໐ဝ၀ჿᴏᴑⲟꬽ𐐬𐓪𑣈𑣗𝛐𝛔𝜊𝜎𝝄𝝈𝝾𝞂𝞸𝞼",
    "p": "ρϱрᴘ⍴ⲣ𝛒𝛠𝜌𝜚𝝆𝝔𝞀𝞎𝞺𝟈",
    "q": "ԛգզ",
    "r": "ʀгᴦⲅꭇꭈꮁ",
    "s": "ƽѕꜱꮪ𐑈𑣁",
    "t": "τтᴛⲧ",
    "u": "ʋυսᴜꞟꭎꭒ𐓶𑣘𝛖𝜐𝝊𝞄𝞾",
    "v": "νѵᴠ∨⋁ꮩ𑜆𑣀𝛎𝜈𝝂𝝼𝞶",
    "w": "ɯѡԝաᴡꮃ𑜊𑜎𑜏",
    "x": "×хᕁᕽ᙮⤫⤬⨯",
    "y": "ɣʏγуүყᶌỿℽⲩꭚ𑣜𝛄𝛾𝜸𝝲𝞬",
    "z": "ᴢꮓ𑣄",
}
