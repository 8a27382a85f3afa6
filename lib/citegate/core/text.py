"""Plain-text helpers shared by every layer: script-based language guesses and stopword lists.

Two language rules exist on purpose, both counting letters of the same scripts here:
`detect_language` picks the disclaimer language of a question or an answer (en/ru/hi have fixed
strings; mixed text goes to the script with more letters), `script_language` is the crude LTR
feature (any Cyrillic means ru, Devanagari means hi). Two stopword lists exist for the same reason:
`STOPWORDS` drops function words from search queries (plan keywords, the lexical lane),
`OVERLAP_STOPWORDS` from the LTR word-overlap features; each list is fixed by the numbers it
produced (the trained rerankers and the recorded metrics), so they are kept apart, not merged.
"""

from __future__ import annotations

import re

CYRILLIC = re.compile(r"[\u0400-\u04FF]")
LATIN = re.compile(r"[A-Za-z]")
DEVANAGARI = re.compile(r"[\u0900-\u097F]")


def detect_language(text: str) -> str:
    """'hi' when Devanagari characters are at least as many as Cyrillic and Latin ones (and there
    are some), else 'ru' when Cyrillic letters are at least as many as Latin ones (and there are
    some), else 'en'. Only the languages with fixed strings are told apart; anything else is
    treated as en."""
    dev = len(DEVANAGARI.findall(text or ""))
    cyr, lat = len(CYRILLIC.findall(text or "")), len(LATIN.findall(text or ""))
    if dev and dev >= max(cyr, lat):
        return "hi"
    return "ru" if cyr and cyr >= lat else "en"


def script_language(text: str) -> str:
    """Crude script guess: Devanagari → `hi`, Cyrillic → `ru`, anything else → `en`."""
    dev = len(DEVANAGARI.findall(text))
    cyr = len(CYRILLIC.findall(text))
    if dev and dev >= cyr:
        return "hi"
    return "ru" if cyr else "en"


# Function words of English and Russian questions: dropped from keyword and lexical queries.
_QUERY_WORDS = """a an the of to in on at for and or is are was were be been what who whom which why how
    when where does do did can could should would will shall that this these those it its with
    from by as about into his her their he she they we you i me my your our not no yes if then
    than so say says said tell tells told according there here have has had any all some more
    most other such only own same very just also describe described explain mean means meaning
    role и в во на о об что как почему кто где когда ли же это этот эта эти с со по за из к ко у
    не да или а но то так для от до при про над под говорит какой какая какие каким чем"""
STOPWORDS = frozenset(_QUERY_WORDS.split())

# A few function words that would otherwise dominate the LTR's crude overlaps (en + ru).
_OVERLAP_WORDS = """the and for are was were what who whom whose which when where why how that this these those
    with from into does did has have had not but its his her their they them you your about than
    then there also can could would should will been being such very
    что как кто где когда почему зачем какой какая какие каком чем это этот эта эти для при был была
    были было его она они оно или так все всех также только уже ещё еще над под без из-за чтобы"""
OVERLAP_STOPWORDS = frozenset(_OVERLAP_WORDS.split())

# Function words and question-template words of Hindi questions ("… का क्या अर्थ है?", "इस
# श्लोक में …"): dropped before the lexical lane romanises a question (`lanes.lexical_query`),
# else "kyā", "hai", "śhloka" would be searched in the romanised Sanskrit.
_HINDI_WORDS = """है हैं था थी थे हो होता होती होते होने होना होगा क्या कौन कौनसा किस किसे किसको किसने
    किसका किसकी किसके कैसे कैसा कैसी क्यों कब कहाँ कहां कितना कितने कितनी का की के को में से पर
    ने और या तथा एवं भी तो ही यह ये वह वे इस इन उस उन इसे उसे इसका इसकी इसके उसका उसकी उसके इसमें
    उसमें इससे उससे अपने अपनी अपना जो जिस जिसे जिन जिनके जब तब कि लिए द्वारा साथ बारे बीच एक
    कोई कुछ सभी सब नहीं करते करता करती करना करने किया किये किए करें गया गई गए रहा रही रहे सकता
    सकती सकते चाहिए हमें हम आप श्लोक श्लोकों अध्याय शब्द शब्दों अर्थ आशय तात्पर्य उल्लेख वर्णन
    प्रयोग उपयोग भूमिका महत्व महत्त्व संबंध सम्बन्ध संदेश मुख्य प्रकार समझ आता बताया बताते
    कहा कहते कहता कहती कथन यहाँ वहाँ लिया दिया जाने जाता जाती जाते देता देते पास बाद पहले बात वाले
    वाला वाली"""
HINDI_STOPWORDS = frozenset(_HINDI_WORDS.split())
