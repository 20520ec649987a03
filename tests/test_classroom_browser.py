"""Ask the class in a real browser: the lecturer's page at 1280×720 in presenter view (the projector), a student's
phone at 390×844, the lecturer link whose key never shows, a lab's "Ask the class" button, and the workbook
shared with the class. Every wait is for a state on the page, never for time."""

from __future__ import annotations

import re

import pytest
from conftest import SCREENSHOTS, api_client, open_tab
from playwright.sync_api import expect

HOSTILE_TITLE = '<img src=x onerror="window.owned=1">Week 6'
PHONE = dict(viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True)
SCREEN = 120_000  # ms: a busy CI machine may take this long to draw a page's first events


def shot(page, name: str) -> None:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / f"{name}.png"))


@pytest.fixture
def lecturer(browser, app_server):
    """The lecturer's laptop, projected: presenter view at 1280×720, clipboard allowed."""
    context = browser.new_context(viewport={"width": 1280, "height": 720})
    context.grant_permissions(["clipboard-read", "clipboard-write"])
    context.set_default_timeout(SCREEN)
    page = context.new_page()
    page.goto(app_server["url"] + "?tab=classroom&present=1", wait_until="load")
    page.get_by_role("button", name="Start a class").wait_for()
    yield page
    context.close()


@pytest.fixture
def phone(browser):
    context = browser.new_context(**PHONE)
    context.set_default_timeout(SCREEN)
    yield context
    context.close()


def start(page) -> tuple[str, str]:
    """Start a class on the lecturer's page: (its code, the lecturer link from the clipboard)."""
    page.get_by_label("Title (shown to the class)").fill(HOSTILE_TITLE)
    page.get_by_role("button", name="Start a class").click()
    code = page.locator(".lab-class-code").inner_text().replace("-", "")
    page.get_by_role("button", name="Copy my lecturer link").click()
    page.wait_for_function("() => navigator.clipboard.readText().then(t => t.includes('lecturer='))")
    link = page.evaluate("navigator.clipboard.readText()")
    return code, link


def no_horizontal_scroll(page) -> bool:
    return page.evaluate("() => document.documentElement.scrollWidth <= window.innerWidth + 1")


@pytest.mark.timeout(1500)  # three pages, a reveal and a phone that follows it, on a busy machine
def test_a_question_from_the_projector_to_a_phone_and_back(lecturer, phone, app_server, tiny_models):
    code, link = start(lecturer)
    key = re.search(r"lecturer=([^&]+)", link).group(1)
    assert key not in lecturer.content() and key not in lecturer.url  # never on the projected screen
    assert lecturer.locator("svg.lab-class-qr title").text_content() == "QR code of the class's join link"
    lecturer.get_by_role("button", name="Ask the class", exact=True).click()
    question = lecturer.locator("#lab-class-projector-question .lab-class-text")
    expect(question).to_have_text("The cat sat on the ____", timeout=SCREEN)
    shot(lecturer, "classroom-projector-asked")

    student = phone.new_page()
    student.goto(app_server["url"] + f"?class={code}", wait_until="load")
    asked = student.locator("#lab-class-student .lab-class-text")
    expect(asked).to_have_text("The cat sat on the ____", timeout=SCREEN)
    box = asked.bounding_box()
    assert box["y"] + box["height"] <= 844, "the question is on the phone's first screen"
    send = student.get_by_role("button", name="Send")
    assert send.bounding_box()["y"] + send.bounding_box()["height"] <= 844 * 1.2, "Send is on the first screen"
    assert student.locator("#lab-class-student").get_by_text(HOSTILE_TITLE).count() == 1  # shown as text
    assert student.evaluate("() => window.owned") is None and student.locator("img[src=x]").count() == 0
    shot(student, "classroom-phone-question")
    answer = student.locator("#lab-class-answer input, #lab-class-answer textarea").first
    answer.fill("<b>Mat</b>")
    with student.expect_response(lambda r: r.url.endswith("/class/answer") and r.status == 200):
        send.click()  # one plain POST (labs/classroom/poll_route.py), not a Gradio event
    student.get_by_text("Received").wait_for()
    expect(student.locator("#lab-class-status")).to_contain_text("<b>Mat</b>", timeout=SCREEN)
    answer.fill("mat.")
    send.click()
    student.get_by_text("replaces your earlier answer").wait_for()
    assert no_horizontal_scroll(student)

    others = api_client(app_server["url"])
    classmates = [others.predict(code, api_name="/class_join")["student_id"] for _ in range(3)]
    for sid, word in zip(classmates, ("mat", "floor", "mat")):
        others.predict(code, sid, word, api_name="/class_answer")
    expect(lecturer.locator(".lab-class-number")).to_have_text("4", timeout=SCREEN)  # the count follows, live
    assert "mat" not in lecturer.locator("#lab-class-lecturing").inner_text().replace("Mat", "")  # answers hidden
    lecturer.get_by_role("button", name="Reveal the answers").click()
    lecturer.locator(".lab-class-cards").wait_for()
    expect(lecturer.locator(".lab-class-cards")).to_contain_text("the model's rank of the class's favourite, “mat”",
                                                                 timeout=SCREEN)
    plot = lecturer.locator("#lab-class-plot .js-plotly-plot")
    plot.wait_for()
    assert plot.bounding_box()["y"] < 720, "the class's chart starts on the projector's first screen"
    shot(lecturer, "classroom-projector-revealed")

    results = student.locator("#lab-class-results .lab-class-bars").first
    results.wait_for()  # the phone saw the reveal by itself
    expect(student.locator(".lab-class-yours")).to_contain_text("Your answer “mat”: 2 classmates gave it too",
                                                                timeout=SCREEN)
    expect(student.locator(".lab-class-mine th").first).to_contain_text("mat", timeout=SCREEN)
    assert no_horizontal_scroll(student)
    student.locator("#lab-class-results").scroll_into_view_if_needed()
    shot(student, "classroom-phone-results")

    # Peer instruction: the class talks it over, then votes again on the same question; the reveal shows both votes.
    lecturer.get_by_role("button", name="Discuss, then vote again").click()
    expect(lecturer.locator("#lab-class-projector-question .lab-class-kind")).to_contain_text("second vote",
                                                                                          timeout=SCREEN)
    expect(student.locator("#lab-class-student .lab-class-kind")).to_contain_text("second vote", timeout=SCREEN)
    expect(student.locator("#lab-class-status")).to_contain_text("Your first answer: “mat”", timeout=SCREEN)
    assert answer.input_value() == ""  # a new vote starts from an empty box
    # A countdown on every screen; the student says how sure they are with one tap.
    lecturer.get_by_role("button", name="90 s", exact=True).click()
    for page in (lecturer, student):
        expect(page.locator(".lab-class-countdown")).to_have_text(re.compile(r"^1:[0-3]\d left$"), timeout=SCREEN)
    student.locator("#lab-class-sure").get_by_text("sure", exact=True).click()
    answer.fill("floor")
    send.click()
    expect(student.locator("#lab-class-status")).to_contain_text("Received: “floor” (sure)", timeout=SCREEN)
    for sid, word in zip(classmates, ("mat", "mat", "floor")):  # by hand: three of the four change their answer
        others.predict(code, sid, word, api_name="/class_answer")
    expect(lecturer.locator(".lab-class-number")).to_have_text("4", timeout=SCREEN)
    lecturer.get_by_role("button", name="Reveal the answers").click()
    cards = lecturer.locator("#lab-class-agreement")
    expect(cards).to_contain_text("changed their answer", timeout=SCREEN)
    expect(cards.locator(".lab-class-card").first).to_contain_text("3 / 4")
    expect(lecturer.locator("#lab-class-plot .gtitle")).to_contain_text("two votes", timeout=SCREEN)
    assert lecturer.locator("#lab-class-plot").bounding_box()["y"] < 720, "both votes' chart on the first screen"
    assert lecturer.locator(".lab-class-join-line").is_visible()  # the join card folded to one line
    expect(lecturer.locator("#lab-class-details")).to_contain_text("1 of 4 said how sure they were", timeout=SCREEN)
    shot(lecturer, "classroom-projector-second-vote")
    lecturer.locator("#lab-present-toggle").click()  # the normal view, projected: the tab's explainer folds
    lecturer.wait_for_function("() => !document.body.classList.contains('lab-present')")
    expect(lecturer.locator(".lab-class-explainer").first).to_be_hidden()
    lecturer.evaluate("() => window.scrollTo(0, 0)")  # the first screen, as the room sees it
    top = lecturer.evaluate("() => document.querySelector('#lab-class-plot').getBoundingClientRect().top + scrollY")
    assert top < 720, "in the normal view too, both votes' chart starts on the projector's first screen"
    shot(lecturer, "classroom-normal-second-vote")
    expect(student.locator(".lab-class-rounds-line")).to_contain_text("3 of the 4 who voted twice changed",
                                                                     timeout=SCREEN)
    expect(student.locator(".lab-class-yours")).to_contain_text("Your answer “floor” (sure)", timeout=SCREEN)
    assert no_horizontal_scroll(student)
    hidden = student.evaluate("""() => [...document.querySelectorAll('#lab-class-results table')].filter(t =>
        t.scrollWidth > t.clientWidth + 1 || t.getBoundingClientRect().right > window.innerWidth).length""")
    assert hidden == 0, "every column of the student's results on the phone's width"
    assert student.locator("#lab-class-results thead th", has_text="Model P").first.is_visible()
    shot(student, "classroom-phone-second-vote")


def test_the_lecturer_link_opens_the_class_without_showing_its_key(lecturer, browser, app_server, tiny_models):
    code, link = start(lecturer)
    context = browser.new_context(viewport={"width": 1280, "height": 720})
    context.set_default_timeout(SCREEN)
    try:
        page = context.new_page()
        page.goto(link, wait_until="load")
        expect(page.locator(".lab-class-code")).to_have_text(f"{code[:3]}-{code[3:]}", timeout=SCREEN)
        key = re.search(r"lecturer=([^&]+)", link).group(1)
        assert "lecturer" not in page.url and key not in page.content()
        assert page.evaluate("() => sessionStorage.getItem('lm-lab-lecturer-link')") is None
        # The browser keeps the class (its key, encrypted as Gradio's BrowserState does) once the event has ended.
        page.wait_for_function("() => (localStorage.getItem('lm-lab-lecturer') || '').length > 200")
        page.reload(wait_until="load")  # the key this browser kept opens the class again
        expect(page.locator(".lab-class-code")).to_have_text(f"{code[:3]}-{code[3:]}", timeout=SCREEN)
    finally:
        context.close()


@pytest.mark.timeout(1500)
def test_a_lab_asks_the_class_and_the_workbook_shares_with_it(lecturer, phone, app_server, tiny_models):
    code, link = start(lecturer)
    open_tab(lecturer, "Fill in the blank")
    field = lecturer.get_by_label("Your sentence (write [MASK] or ___ for a blank)")
    field.fill("The [MASK] barked loudly at the mailman")
    lecturer.get_by_role("button", name="🙋 Ask the class about this blank").click()
    expect(lecturer.locator("#lab-class-projector-question .lab-class-text")).to_have_text(
        "The [MASK] barked loudly at the mailman", timeout=SCREEN)  # and the page is on the Class tab

    student = phone.new_page()
    student.goto(app_server["url"] + f"?class={code}", wait_until="load")
    expect(student.locator("#lab-class-student .lab-class-text")).to_have_text(
        "The [MASK] barked loudly at the mailman", timeout=SCREEN)
    open_tab(student, "Fill in the blank")
    student.locator(".js-plotly-plot").first.wait_for()
    assert not student.locator(".lab-ask-class").first.is_visible()  # a lecturer's button only
    open_tab(student, "Part A & B workbook")
    student.locator("#lab-part-b-card h3").wait_for()
    # Nothing answered yet: nothing is shared, and the student is told so (the verdicts' path: test_classroom.py).
    student.get_by_role("button", name="Share my results with the class (anonymous)").click()
    student.get_by_text("Nothing to share yet: answer a question of the workbook").wait_for()
    open_tab(lecturer, "Ask the class")
    overview = api_client(app_server["url"])
    key = re.search(r"lecturer=([^&]+)", link).group(1)
    assert overview.predict(key, api_name="/class_overview")["workbook"]["students"] == 0


@pytest.mark.timeout(900)
def test_a_lecture_prepared_as_a_file_runs_with_one_click_per_question(lecturer, phone, app_server, tiny_models,
                                                                      tmp_path):
    """The lecturer imports a Moodle GIFT file of two questions, "Next" asks them in order, a phone follows; a
    malformed file is refused with its line and changes nothing."""
    code, _ = start(lecturer)
    lecturer.get_by_text("The lecture's questions, prepared ahead").click()
    upload = lecturer.locator("#lab-class-plan input[type=file]")
    bad = tmp_path / "broken.gift.txt"
    bad.write_text("::Q1:: Which reads both sides? {=BERT ~GPT-2}\n\n::Q2:: Unclosed {=yes ~no\n")
    upload.set_input_files(str(bad))
    expect(lecturer.get_by_text(re.compile(r"Line 3"))).to_be_visible(timeout=SCREEN)
    lecture = tmp_path / "week6.gift.txt"
    lecture.write_text("::Q1:: Which model reads both sides of a blank? {=BERT ~GPT-2}\n\n"
                       "::Q2:: LoRA r \\= 16 on a 768 × 768 weight\\: trainable parameters? {#24576}\n")
    upload.set_input_files(str(lecture))
    next_button = lecturer.get_by_role("button", name="Next: prepared question 1 of 2")
    next_button.click()
    expect(lecturer.locator("#lab-class-projector-question .lab-class-text")).to_have_text(
        "Which model reads both sides of a blank?", timeout=SCREEN)
    student = phone.new_page()
    student.goto(app_server["url"] + f"?class={code}", wait_until="load")
    expect(student.locator("#lab-class-student .lab-class-text")).to_have_text(
        "Which model reads both sides of a blank?", timeout=SCREEN)
    lecturer.get_by_role("button", name="Reveal the answers").click()
    lecturer.get_by_role("button", name="Next: prepared question 2 of 2").click()
    expect(student.locator("#lab-class-student .lab-class-text")).to_contain_text("trainable parameters?",
                                                                                timeout=SCREEN)
    shot(lecturer, "classroom-projector-prepared")
