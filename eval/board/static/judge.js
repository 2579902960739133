// Keyboard judging for /judge/CAMPAIGN/task/N (see eval/board/judging_routes.py).
// Each grade is POSTed as it is given; a sentence shows "saved" only once the server has
// committed it. The page works without this script (one form per sentence).
(function () {
  "use strict";
  var list = document.getElementById("items");
  if (!list) { return; }
  var items = Array.prototype.slice.call(list.querySelectorAll("li.item"));
  var keys = JSON.parse(list.dataset.keys);
  var csrf = document.querySelector("meta[name=csrf]").content;
  var panel = document.getElementById("guidelines");
  var done = document.getElementById("done");
  var current = 0;
  var shownAt = performance.now();

  function focus(i) {
    if (i < 0 || i >= items.length) { return; }
    items[current].classList.remove("current");
    current = i;
    items[current].classList.add("current");
    items[current].scrollIntoView({ block: "nearest" });
    shownAt = performance.now();
  }

  function mark(item, grade, unsure) {
    item.dataset.grade = unsure ? "u" : String(grade);
    item.classList.add("graded");
    item.classList.remove("failed");
    Array.prototype.forEach.call(item.querySelectorAll("button.g"), function (b) {
      var chosen = unsure ? b.name === "unsure" : (b.name === "grade" && b.value === String(grade));
      b.classList.toggle("chosen", chosen);
    });
    item.querySelector(".status").textContent = "saved";
  }

  function send(i, grade, unsure) {
    var item = items[i];
    var seconds = (performance.now() - shownAt) / 1000;
    item.querySelector(".status").textContent = "saving…";
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
    }).catch(function (err) {
      item.classList.add("failed");
      item.querySelector(".status").textContent = "not saved (" + err.message + "): give the grade again";
    });
  }

  function allGraded() {
    return items.every(function (it) { return it.classList.contains("graded"); });
  }

  function next() {
    if (current + 1 < items.length) { focus(current + 1); }
    else if (allGraded()) { window.location.href = list.dataset.next; }
  }

  function back() {
    if (current > 0) { focus(current - 1); }
    else if (list.dataset.previous) { window.location.href = list.dataset.previous; }
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
    if (Object.prototype.hasOwnProperty.call(keys, key)) {
      send(current, keys[key], false); next();
    } else if (key === "u") {
      send(current, null, true); next();
    } else if (key === "j" || key === "n" || key === "ArrowDown" || key === "ArrowRight") {
      next();
    } else if (key === "k" || key === "b" || key === "ArrowUp" || key === "ArrowLeft") {
      back();
    } else if (key === "g" || key === "?") {
      toggleGuidelines(true);
    } else if (key === "Enter") {
      if (allGraded()) { window.location.href = list.dataset.next; }
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

  var first = items.findIndex(function (it) { return !it.classList.contains("graded"); });
  items[0].classList.remove("current");
  focus(first < 0 ? 0 : first);
})();
