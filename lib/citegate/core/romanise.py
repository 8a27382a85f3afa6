"""Devanagari in the Latin romanisation the gita corpus is written in, for the lexical lane.

The demo corpus holds each verse's Sanskrit only as a romanisation (`transliteration` of
`data/corpora/gita/verse.json`: "yady apy ete na paśhyanti lobhopahata-chetasaḥ") and its
translations in English; a Hindi question quotes the same words in Devanagari ("लोभोपहतचेतसः का
अर्थ क्या है?"), so without this the lexical lane has nothing to match. `romanise` writes
Devanagari in that scheme (IAST with "ch", "chh", "śh", "ṣh", "ṛi", "ṁ"; every consonant keeps
its inherent "a" unless a virama or vowel sign follows, as in Sanskrit), and `ascii_fold` drops
the diacritics, which is how the English translations spell names ("Dhritarashtra", "Krishna").
Both are pure: text without Devanagari comes back unchanged. `latinise_cyrillic` writes Russian the
way Russian spells Sanskrit names ("Арджуна" -> "arjuna", "Дхритараштра" -> "dhritarashtra"), for
the LTR reranker's cross-lingual overlap of a Russian question with English passages.
"""

from __future__ import annotations

import unicodedata

from citegate.core.text import DEVANAGARI

_CONSONANTS = {
    "क": "k", "ख": "kh", "ग": "g", "घ": "gh", "ङ": "ṅ",
    "च": "ch", "छ": "chh", "ज": "j", "झ": "jh", "ञ": "ñ",
    "ट": "ṭ", "ठ": "ṭh", "ड": "ḍ", "ढ": "ḍh", "ण": "ṇ",
    "त": "t", "थ": "th", "द": "d", "ध": "dh", "न": "n",
    "प": "p", "फ": "ph", "ब": "b", "भ": "bh", "म": "m",
    "य": "y", "र": "r", "ल": "l", "ळ": "ḷ", "व": "v",
    "श": "śh", "ष": "ṣh", "स": "s", "ह": "h",
}  # fmt: skip
# A consonant followed by the nukta sign (Hindi's borrowed sounds; NFD splits the precomposed
# letters, U+0958-U+095F, into consonant and nukta).
_NUKTA = "\u093c"
_WITH_NUKTA = {"क": "q", "ख": "ḵh", "ग": "ġ", "ज": "z", "फ": "f", "ड": "ṛ", "ढ": "ṛh"}
_VOWELS = {
    "अ": "a", "आ": "ā", "इ": "i", "ई": "ī", "उ": "u", "ऊ": "ū", "ऋ": "ṛi", "ॠ": "ṝ",
    "ऌ": "ḷi", "ए": "e", "ऐ": "ai", "ओ": "o", "औ": "au", "ऑ": "o",
}  # fmt: skip
_SIGNS = {
    "ा": "ā", "ि": "i", "ी": "ī", "ु": "u", "ू": "ū", "ृ": "ṛi", "ॄ": "ṝ", "ॢ": "ḷi",
    "े": "e", "ै": "ai", "ो": "o", "ौ": "au", "ॉ": "o",
}  # fmt: skip
_VIRAMA = "\u094d"
_MARKS = {"ं": "ṁ", "ँ": "ṁ", "ः": "ḥ", "ऽ": "'"}
_DIGITS = dict(zip("०१२३४५६७८९", "0123456789", strict=True))
_DANDAS = {"।": " ", "॥": " "}


def has_devanagari(text: str) -> bool:
    """Whether any character of `text` is in the Devanagari block."""
    return DEVANAGARI.search(text) is not None


def romanise(text: str) -> str:
    """`text` with its Devanagari written in the corpus's romanisation, the rest unchanged:
    "धृतराष्ट्र उवाच" -> "dhṛitarāṣhṭra uvācha", "पश्यन्ति" -> "paśhyanti"."""
    if not has_devanagari(text):
        return text
    chars = unicodedata.normalize("NFD", text)
    out: list[str] = []
    i = 0
    while i < len(chars):
        c = chars[i]
        if c in _CONSONANTS:
            nukta = i + 1 < len(chars) and chars[i + 1] == _NUKTA
            out.append(_WITH_NUKTA.get(c, _CONSONANTS[c]) if nukta else _CONSONANTS[c])
            i += 2 if nukta else 1
            nxt = chars[i] if i < len(chars) else ""
            if nxt == _VIRAMA:
                i += 1
            elif nxt in _SIGNS:
                out.append(_SIGNS[nxt])
                i += 1
            else:
                out.append("a")
            continue
        out.append(
            _VOWELS.get(c) or _MARKS.get(c) or _DIGITS.get(c) or _DANDAS.get(c)
            or ("" if c in (_NUKTA, _VIRAMA) else c)
        )  # fmt: skip
        i += 1
    return unicodedata.normalize("NFC", "".join(out))


# Russian letters in Latin, as Russian transcribes Sanskrit: "дж" is "j" (Арджуна), "х" after a
# stop is the aspirate ("бх", "дх"), soft and hard signs are dropped.
_CYRILLIC = {
    "а": "a", "б": "b", "в": "v", "г": "g", "д": "d", "е": "e", "ё": "e", "ж": "zh", "з": "z",
    "и": "i", "й": "y", "к": "k", "л": "l", "м": "m", "н": "n", "о": "o", "п": "p", "р": "r",
    "с": "s", "т": "t", "у": "u", "ф": "f", "х": "h", "ц": "ts", "ч": "ch", "ш": "sh",
    "щ": "shch", "ъ": "", "ы": "y", "ь": "", "э": "e", "ю": "yu", "я": "ya",
}  # fmt: skip


def has_cyrillic(text: str) -> bool:
    """Whether any character of `text` is a Cyrillic letter of the Russian alphabet."""
    return any(c in _CYRILLIC for c in text.lower())


def latinise_cyrillic(text: str) -> str:
    """`text` lowercased with its Russian letters in Latin ("Кришна" -> "krishna"), the rest
    unchanged."""
    low = text.lower().replace("дж", "j")
    return "".join(_CYRILLIC.get(c, c) for c in low)


def ascii_fold(text: str) -> str:
    """`text` without its diacritics ("kṛiṣhṇa" -> "krishna"): the decomposed form's combining
    marks dropped."""
    decomposed = unicodedata.normalize("NFD", text)
    return "".join(c for c in decomposed if not unicodedata.combining(c))
