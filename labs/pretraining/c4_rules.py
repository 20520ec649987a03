"""Pre-training, C4's cleaning rules (Textbook 20.10.4; Raffel et al. 2020, §2.2) as named steps on web-like
pages: each rule removes whole pages, lines or sentences, and says which and why.

The rules, in the order they run here, with the paper's numbers (the textbook gives the 5 sentences; the paper
the 3 words a line):
1. lorem ipsum (page): the phrase anywhere in the page;
2. curly bracket (page): a "{" or "}" anywhere in the page (code);
3. bad word (page): a word on the bad-words list (classifier_filters.bad_words: LM Lab's stand-in built from
   profanity-check's vocabulary; C4's own list is not shipped here);
4. terminal punctuation (line): a line that does not end in . ! ? or a closing quotation mark;
5. short line (line): fewer than 3 words;
6. javascript (line): a line with the word "javascript", in any case;
7. too few sentences (page): fewer than 5 sentences in the lines left (nltk's Punkt sentence splitter,
   untrained: it also splits after "Mr.");
8. repeated span (sentences): a three-sentence span (lower case) seen earlier, in an earlier page or earlier in
   the same page, loses its sentences; a page left with fewer than 5 goes (with rule 7 on; none left, with it
   off);
9. language (page): py3langid on the cleaned text, English with probability at least the threshold (C4 used
   langdetect at 0.99).

TensorFlow Datasets' c4_utils, which built C4, differs in ways LM Lab's note names: it keeps lines of at least
5 words and pages of at least 3 sentences, reads the page rules only in the lines it kept, and compares spans
within one line at a time."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from functools import lru_cache

from labs.core.errors import BadInput, check_number, check_text
from labs.pretraining import classifier_filters as cf
from labs.pretraining.curation import split_documents

RULES = ("lorem ipsum", "curly bracket", "bad word", "terminal punctuation", "short line", "javascript",
         "too few sentences", "repeated span", "language")
UNIT = {"terminal punctuation": "lines", "short line": "lines", "javascript": "lines", "repeated span": "sentences"}
END_MARKS = (".", "!", "?", '"', "”", "’")
MIN_WORDS_PER_LINE, MIN_SENTENCES, SPAN = 3, 5, 3
MAX_PAGES, MAX_PAGE_CHARS, MAX_ALL_CHARS = 40, 2000, 20_000
EXAMPLE = "The market opens on Saturday.\nPlease enable JavaScript to see the map.\n\nLorem ipsum dolor sit amet."
# LM Lab's own pages, written to break C4's rules: (what the page is, its text). Page 6 is a rude review with
# two mild insults, LM Lab's own test text for the bad-word rule.
PAGES = (
    ("a recipe with a menu, a title and a tag line", "Home | Recipes | About\nHow to bake a simple sourdough loaf\n"
     "Sourdough needs only flour, water, salt and a lively starter.\nMix the dough in the evening and let it rest "
     "overnight on the counter.\nIn the morning, shape the loaf gently and place it in a floured basket.\nBake it "
     "in a very hot oven with the lid on for the first twenty minutes.\nLet the bread cool for an hour before you "
     "cut the first slice.\nPosted in Baking"),
    ("news with a JavaScript notice", "The harbour festival returns this weekend with boat races and music.\n"
     "Please enable JavaScript in your browser to see the festival map.\nFood stalls will line the quay from ten "
     "in the morning until late.\nChildren can try sailing in small dinghies with trained instructors.\nThe "
     "fireworks start at nine o'clock on Saturday evening.\nBuses will run every fifteen minutes from the railway "
     "station."),
    ("a template page", "Welcome to our new website.\nLorem ipsum dolor sit amet, consectetur adipiscing elit.\n"
     "Sed do eiusmod tempor incididunt ut labore et dolore magna aliqua.\nOur team will add real content here "
     "very soon."),
    ("a tutorial with code", "Loops repeat a block of code a fixed number of times.\nIn JavaScript, a loop that "
     "counts to three looks like this.\nfor (let i = 0; i < 3; i++) { console.log(i); }\nThe variable i starts "
     "at zero and grows by one each time.\nWhen i reaches three, the loop stops and the program moves on.\nTry "
     "changing the number to see what happens."),
    ("a shop page", "Ceramic mug, blue.\nPrice: 12 euros.\nIn stock!\nThis handmade mug holds a large cup of "
     "coffee.\nIt is safe to use in the dishwasher.\nAdd to basket"),
    ("a rude review (LM Lab's own test text: two mild insults)", "I ordered this phone case last month and it "
     "broke in two days.\nWhat a crap product, honestly.\nThe seller never answered my emails.\nOnly an idiot "
     "would pay this much for cheap plastic.\nI would not recommend this shop to anyone."),
    ("a memoir that copies three sentences of the recipe", "My grandmother taught me to bake bread when I was "
     "ten.\nSourdough needs only flour, water, salt and a lively starter.\nMix the dough in the evening and let it "
     "rest overnight on the counter.\nIn the morning, shape the loaf gently and place it in a floured basket.\n"
     "She always sang while the dough was rising.\nHer kitchen smelled of warm bread every Sunday.\nNow I bake the "
     "same loaf for my own children.\nThey like to eat the crust while it is still warm."),
    ("a French market page", "Le marché ouvre tous les samedis sur la place de l'église.\nOn y trouve des "
     "fromages, du pain frais et des légumes du jardin.\nLes enfants adorent le stand de crêpes près de la "
     "fontaine.\nLes habitants viennent souvent à pied ou à vélo.\nLe marché ferme à midi, quand les cloches "
     "sonnent."),
)


@dataclass
class Removed:
    page: int
    rule: str
    text: str  # the line or sentence removed
    of: int | None = None  # repeated span: the page where the span was seen first


@dataclass
class Page:
    number: int
    text: str
    lines: int  # non-blank lines in
    kept: bool = True
    rule: str = ""  # the rule that removed the page ("" when kept)
    reason: str = ""
    sentences: int | None = None  # sentences left after the line rules (then after the repeated spans)
    language: str | None = None  # py3langid on the cleaned text, for pages that reach that rule
    language_probability: float | None = None
    cleaned: str = ""  # what C4 would keep of the page
    kept_lines: list[str] = field(default_factory=list, repr=False)


@dataclass
class C4Cleaning:
    rules: list[str]
    language_threshold: float
    bad_word_probability: float
    pages: list[Page]
    removed: list[Removed]

    def counts(self) -> list[dict]:
        """Per rule that ran: how many pages it read, how many lines / sentences / pages it removed."""
        left, rows = len(self.pages), []
        for rule in self.rules:
            pages = sum(p.rule == rule for p in self.pages)
            parts = sum(r.rule == rule for r in self.removed)
            rows.append({"rule": rule, "unit": UNIT.get(rule, "pages"), "pages_in": left,
                         "removed": parts if rule in UNIT else pages, "pages_removed": pages,
                         "pages_out": left - pages})
            left -= pages
        return rows

    def to_json(self) -> dict:
        pages = [{k: v for k, v in asdict(p).items() if k != "kept_lines"} for p in self.pages]
        return {"rules": self.rules, "language_threshold": self.language_threshold,
                "bad_word_probability": self.bad_word_probability,
                "bad_words": len(cf.bad_words(self.bad_word_probability)),
                "limits": {"min_words_per_line": MIN_WORDS_PER_LINE, "min_sentences": MIN_SENTENCES, "span": SPAN,
                           "end_marks": list(END_MARKS)},
                "pages": pages, "removed": [asdict(r) for r in self.removed], "counts": self.counts(),
                "kept": sum(p.kept for p in self.pages)}


def builtin_pages() -> tuple[str, ...]:
    return tuple(text for _, text in PAGES)


def check_pages(pages) -> list[str]:
    """The built-in pages for "" (or None); otherwise pages separated by a blank line (lines by a line break) or
    a list of texts, within the limits."""
    if pages is None or (isinstance(pages, str) and not pages.strip()):
        return list(builtin_pages())
    if isinstance(pages, str):
        texts = split_documents(check_text(pages, EXAMPLE, max_chars=MAX_ALL_CHARS, what="pages"))
    elif isinstance(pages, (list, tuple)) and all(isinstance(p, str) for p in pages):
        texts = [p.strip() for p in pages if p.strip()]
    else:
        raise BadInput("The pages must be text (pages separated by a blank line) or a list of texts.")
    if not texts:
        raise BadInput(f"Type some pages first, separated by a blank line, for example “{EXAMPLE}”.")
    if len(texts) > MAX_PAGES:
        raise BadInput(f"That is {len(texts)} pages; at most {MAX_PAGES} are read here. Remove some.")
    long = [i + 1 for i, t in enumerate(texts) if len(t) > MAX_PAGE_CHARS]
    if long:
        raise BadInput(f"Page {long[0]} is {len(texts[long[0] - 1]):,} characters long; at most {MAX_PAGE_CHARS:,} "
                       "a page are read here. Shorten it.")
    if sum(map(len, texts)) > MAX_ALL_CHARS:
        raise BadInput(f"The pages are {sum(map(len, texts)):,} characters in all; at most {MAX_ALL_CHARS:,} are "
                       "read here.")
    return texts


def check_rules(rules) -> list[str]:
    """The rules to run, in C4's order here (None or "": all of them)."""
    if rules is None or rules == "":
        return list(RULES)
    if isinstance(rules, str):
        rules = [r.strip() for r in rules.split(",") if r.strip()]
    if not isinstance(rules, (list, tuple)) or not all(isinstance(r, str) for r in rules):
        raise BadInput("The rules must be a list of rule names.")
    unknown = [r for r in rules if r not in RULES]
    if unknown:
        raise BadInput(f"“{unknown[0][:40]}” is not one of C4's rules here: {', '.join(RULES)}.")
    return [r for r in RULES if r in rules]


@lru_cache(maxsize=1)
def _splitter():
    from nltk.tokenize.punkt import PunktSentenceTokenizer

    return PunktSentenceTokenizer()  # untrained: Punkt's own defaults, no download needed


def sentences(line: str) -> list[str]:
    return _splitter().tokenize(line)


# ---------------------------------------------------------------- the rules


def page_reason(rule: str, text: str, bad: frozenset[str]) -> str:
    lower = text.lower()
    if rule == "lorem ipsum" and "lorem ipsum" in lower:
        return "the phrase “lorem ipsum”: placeholder text"
    if rule == "curly bracket" and ("{" in text or "}" in text):
        return "a curly bracket: probably code"
    if rule == "bad word" and (found := sorted(set(cf.words_of(text)) & bad)):
        return f"{len(found)} word{'s' * (len(found) > 1)} on the bad-words list: {', '.join(found)}"
    return ""


def line_reason(rule: str, line: str) -> str:
    if rule == "terminal punctuation" and not line.endswith(END_MARKS):
        return "does not end in terminal punctuation"
    if rule == "short line" and (n := len(line.split())) < MIN_WORDS_PER_LINE:
        return f"{n} word{'s' * (n != 1)}: fewer than {MIN_WORDS_PER_LINE}"
    if rule == "javascript" and "javascript" in line.lower():
        return "mentions JavaScript"
    return ""


def drop(page: Page, rule: str, reason: str) -> None:
    page.kept, page.rule, page.reason, page.cleaned = False, rule, reason, ""


def repeated_spans(pages: list[Page], removed: list[Removed], min_sentences: int) -> None:
    """All but the first occurrence of every three-sentence span (lower case), across the pages in order."""
    first: dict[tuple[str, ...], int] = {}
    for p in (p for p in pages if p.kept):
        sents = [(i, s) for i, line in enumerate(p.kept_lines) for s in sentences(line)]
        lower = [s.lower() for _, s in sents]
        gone: dict[int, int] = {}  # sentence index -> the page the span was seen in first
        for i in range(len(sents) - SPAN + 1):
            span = tuple(lower[i:i + SPAN])
            if span in first:
                gone.update({j: first[span] for j in range(i, i + SPAN) if j not in gone})
            else:
                first[span] = p.number
        removed += [Removed(p.number, "repeated span", sents[j][1], of) for j, of in sorted(gone.items())]
        left = [(i, s) for j, (i, s) in enumerate(sents) if j not in gone]
        p.kept_lines = [" ".join(s for i, s in left if i == n) for n in range(len(p.kept_lines))]
        p.kept_lines, p.sentences = [line for line in p.kept_lines if line], len(left)
        if gone and p.sentences < min_sentences:
            drop(p, "repeated span", f"{p.sentences} sentence{'s' * (p.sentences != 1)} left once its repeated "
                 f"spans went: fewer than {min_sentences}")


def clean(pages=None, rules=None, language_threshold=cf.DEFAULT_LANGUAGE_PROBABILITY,
          bad_word_probability=cf.DEFAULT_BAD_WORD_PROBABILITY) -> C4Cleaning:
    texts, on = check_pages(pages), check_rules(rules)
    threshold = check_number(language_threshold, "The language probability threshold", 0.0, 1.0)
    cut = check_number(bad_word_probability, "The bad-word probability", 0.5, 1.0)
    bad = cf.bad_words(cut) if "bad word" in on else frozenset()
    docs = [Page(i + 1, t, sum(1 for line in t.splitlines() if line.strip())) for i, t in enumerate(texts)]
    removed: list[Removed] = []
    for rule in (r for r in RULES[:3] if r in on):
        for p in (p for p in docs if p.kept):
            if reason := page_reason(rule, p.text, bad):
                drop(p, rule, reason)
    line_rules = [r for r in RULES[3:6] if r in on]
    for p in (p for p in docs if p.kept):
        for line in (line.strip() for line in p.text.splitlines() if line.strip()):
            rule = next((r for r in line_rules if line_reason(r, line)), "")
            if rule:
                removed.append(Removed(p.number, rule, line))
            else:
                p.kept_lines.append(line)
        p.sentences = sum(len(sentences(line)) for line in p.kept_lines)
        if "too few sentences" in on and p.sentences < MIN_SENTENCES:
            drop(p, "too few sentences", f"{p.sentences} sentence{'s' * (p.sentences != 1)} in the lines left: "
                 f"fewer than {MIN_SENTENCES}")
        elif not p.kept_lines:
            drop(p, removed[-1].rule, "no line left once its lines went")
    if "repeated span" in on:
        repeated_spans(docs, removed, MIN_SENTENCES if "too few sentences" in on else 1)
    for p in (p for p in docs if p.kept):
        p.cleaned = "\n".join(p.kept_lines)
        if "language" in on:
            p.language, p.language_probability = cf.identify(p.cleaned)
            if reason := cf.language_reason(p.language, p.language_probability, threshold):
                drop(p, "language", reason)
    return C4Cleaning(on, threshold, cut, docs, removed)


def c4_clean_json(pages: str = "", rules: str = "",
                  language_threshold: float = cf.DEFAULT_LANGUAGE_PROBABILITY,
                  bad_word_probability: float = cf.DEFAULT_BAD_WORD_PROBABILITY) -> dict:
    """The endpoint: "" for pages is LM Lab's own built-in pages; rules (names separated by commas, or a list;
    "" for all of them) picks C4's rules."""
    return clean(pages, rules, language_threshold, bad_word_probability).to_json()
