// Judging by keyboard, mouse and touch for /judge/CAMPAIGN/task/N (see dsr/judging/routes.py).
// Each grade is POSTed as it is given; a sentence shows "saved" only once the server has
// committed it. Grading stops after the last sentence: the end of the dialogue is a place of
// its own where grade keys do nothing, and only Enter or the "Next dialogue" control goes on.
// The page works without this script (one form per sentence).
// The conversation's box opens at its latest turn: the line above it says how many turns are
// out of sight above (wholly or in part), and goes once the first turn is in view.
(function () {
  "use strict";
  var box = document.getElementById("turns");
  var cue = document.getElementById("earlier");
  if (!box || !cue) { return; }
  var turns = Array.prototype.slice.call(box.querySelectorAll(".turns li"));
  function update() {
    var top = box.getBoundingClientRect().top;
    var above = turns.filter(function (li) { return li.getBoundingClientRect().top < top - 1; }).length;
    cue.hidden = above === 0;
    cue.querySelector(".count").textContent = above + (above === 1 ? " earlier turn" : " earlier turns");
  }
  box.addEventListener("scroll", update, { passive: true });
  window.addEventListener("resize", update);
  update();
})();

(function () {
  "use strict";
  var list = document.getElementById("items");
  if (!list) { return; }
  var items = Array.prototype.slice.call(list.querySelectorAll("li.item"));
  var keys = JSON.parse(list.dataset.keys);
  var csrf = document.querySelector("meta[name=csrf]").content;
  var panel = document.getElementById("guidelines");
  var done = document.getElementById("done");
  var end = document.getElementById("end");
  var onward = document.getElementById("next-dialogue");
  var message = document.getElementById("end-message");
  var said = message.textContent;
  var current = 0;                 // a sentence, or items.length: the end of the dialogue
  var shownAt = performance.now();

  function atEnd() { return current === items.length; }

  function focus(i, opening) {
    if (i < 0 || i > items.length) { return; }
    (atEnd() ? end : items[current]).classList.remove("current");
    current = i;
    var here = atEnd() ? end : items[current];
    here.classList.add("current");
    // on opening the page stays at its top: the dialogue's latest turns and "Next to speak"
    // are what an assessor reads first (a phone shows them, the sentences are a scroll down)
    if (!opening) { here.scrollIntoView({ block: "nearest" }); }
    if (atEnd()) {
      tell();
      onward.focus({ preventScroll: true });
    } else if (document.activeElement === onward) {
      onward.blur();
    }
    shownAt = performance.now();
  }

  function tell() {               // the end's message: what is left to grade (sends still under way count)
    var left = items.filter(function (it) { return !graded(it) && !it.classList.contains("sending"); }).length;
    message.textContent = said + (left ? " " + left + " sentence" + (left > 1 ? "s are" : " is") +
      " not graded yet (k or ↑ goes back)." : "");
  }

  function mark(item, grade, unsure) {
    item.dataset.grade = unsure ? "u" : String(grade);
    item.classList.add("graded");
    item.classList.remove("failed");
    Array.prototype.forEach.call(item.querySelectorAll("button.g"), function (b) {
      var chosen = unsure ? b.name === "unsure" : (b.name === "grade" && b.value === String(grade));
      b.classList.toggle("chosen", chosen);
      b.setAttribute("aria-pressed", chosen ? "true" : "false");
    });
    item.querySelector(".status").textContent = "saved";
  }

  function send(i, grade, unsure) {
    var item = items[i];
    // the store refuses more than max_seconds: a page left open counts as that long
    var seconds = Math.min((performance.now() - shownAt) / 1000, Number(list.dataset.maxSeconds));
    item.querySelector(".status").textContent = "saving…";
    item.classList.add("sending");
    return fetch(list.dataset.api, {
      method: "POST", credentials: "same-origin",
      headers: { "Content-Type": "application/json", "X-CSRF-Token": csrf },
      body: JSON.stringify({ item: item.dataset.key, grade: unsure ? null : grade, unsure: unsure, seconds: seconds })
    }).then(function (answer) {
      return answer.json().then(function (body) {
        if (!answer.ok) { throw new Error(body.error || ("HTTP " + answer.status)); }
        if (body.new) { done.textContent = String(Number(done.textContent) + 1); }
        mark(item, grade, unsure);
      });
    }).finally(function () {
      item.classList.remove("sending");
    }).catch(function (err) {
      item.classList.add("failed");
      if (atEnd()) { tell(); }
      item.querySelector(".status").textContent = "not saved (" + err.message + "): give the grade again";
    });
  }

  function graded(it) { return it.classList.contains("graded"); }

  function allGraded() { return items.every(graded); }

  function next() {
    if (!atEnd()) { focus(current + 1); }
  }

  function back() {
    if (current > 0) { focus(current - 1); }
    else if (list.dataset.previous) { window.location.href = list.dataset.previous; }
  }

  function stopped() {            // a grade key at the end: nothing is graded, the page says why
    message.textContent = said + " Grade keys do nothing here: Enter or the button goes on.";
    end.classList.remove("nudge");
    void end.offsetWidth;
    end.classList.add("nudge");
  }

  function toggleGuidelines(show) {
    panel.hidden = show === undefined ? !panel.hidden : !show;
  }

  document.addEventListener("keydown", function (event) {
    if (event.ctrlKey || event.altKey || event.metaKey) { return; }
    var key = event.key;
    if (!panel.hidden) {
      if (key === "Escape" || key === "g" || key === "?") { toggleGuidelines(false); event.preventDefault(); }
      return;
    }
    var target = event.target;
    if ((key === "Enter" || key === " ") && target && target.closest && target.closest("a, button")) {
      return;                     // a focused link or button does what it says (Tab users, the end)
    }
    if (Object.prototype.hasOwnProperty.call(keys, key) || key === "u") {
      if (atEnd()) { stopped(); }
      else { send(current, key === "u" ? null : keys[key], key === "u"); next(); }
    } else if (key === "j" || key === "n" || key === "ArrowDown" || key === "ArrowRight") {
      next();
    } else if (key === "k" || key === "b" || key === "ArrowUp" || key === "ArrowLeft") {
      back();
    } else if (key === "g" || key === "?") {
      toggleGuidelines(true);
    } else if (key === "Enter") {
      if (atEnd() || allGraded()) { window.location.href = onward.href; }
      else { focus(items.length); }
    } else {
      return;
    }
    event.preventDefault();
  });

  items.forEach(function (item, i) {
    item.querySelector("form").addEventListener("submit", function (event) {
      event.preventDefault();
      var button = event.submitter;
      focus(i);
      if (!button) { return; }
      if (button.name === "unsure") { send(i, null, true); } else { send(i, Number(button.value), false); }
      next();
    });
  });

  onward.addEventListener("focus", function () {   // reached by Tab or a click: the end, where keys stop
    if (!atEnd()) { focus(items.length); }
  });

  var first = items.findIndex(function (it) { return !graded(it); });
  items[0].classList.remove("current");
  focus(first < 0 ? items.length : first, true);
})();
