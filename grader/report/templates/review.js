(function () {
  "use strict";
  var groups = Array.prototype.slice.call(document.querySelectorAll("article.group"));
  var current = 0;

  function field(group, name) { return group.querySelector("input." + name); }
  function say(group, text, isError) {
    var status = group.querySelector(".status");
    status.textContent = text;
    status.className = "status" + (isError ? " error" : "");
  }
  function select(i) {
    if (!groups.length) { return; }
    i = Math.max(0, Math.min(groups.length - 1, i));
    groups[current].classList.remove("current");
    current = i;
    groups[i].classList.add("current");
    groups[i].focus({ preventScroll: true });
    groups[i].scrollIntoView({ block: "nearest" });
  }
  function nextUndecided() {
    for (var k = 1; k <= groups.length; k++) {
      var i = (current + k) % groups.length;
      if (!groups[i].classList.contains("decided")) { select(i); return; }
    }
  }
  function readScore(text) {
    var t = text.trim().replace(",", ".");
    if (!/^\d+(\.\d+)?$|^\.\d+$/.test(t)) { return null; }
    return parseFloat(t);
  }
  function send(group, points, comment) {
    say(group, "saving…", false);
    fetch("decide", {
      method: "POST",
      credentials: "same-origin",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ group: group.getAttribute("data-group"), points: points, comment: comment })
    }).then(function (response) {
      return response.json().then(function (body) { return { ok: response.ok, body: body }; });
    }).then(function (answer) {
      if (!answer.ok) { say(group, answer.body.error || "not saved", true); return; }
      var b = answer.body;
      group.querySelector(".decision").textContent = b.label;
      group.classList.toggle("decided", b.decided);
      field(group, "score").value = b.points === null ? "" : String(b.points);
      field(group, "comment").value = b.comment;
      document.getElementById("decided-count").textContent = String(b.decided_groups);
      say(group, b.decided ? "saved" : "decision removed", false);
      group.setAttribute("data-saved", String(Number(group.getAttribute("data-saved") || "0") + 1));
    }).catch(function (err) { say(group, "not saved: " + err, true); });
  }
  function submit(group, from) {
    var score = field(group, "score");
    var comment = field(group, "comment").value;
    var points = readScore(score.value);
    if (points === null) {
      say(group, score.value.trim() ? "the score must be a number" : "type a score first, then Enter", true);
      score.focus();
      return;
    }
    var max = parseFloat(group.getAttribute("data-max"));
    if (points > max + 1e-9) { say(group, "at most " + max, true); score.focus(); return; }
    from.blur();
    send(group, points, comment);
    var i = groups.indexOf(group);
    select(i + 1 < groups.length ? i + 1 : i);
  }

  groups.forEach(function (group, i) {
    group.addEventListener("focusin", function () {
      if (current !== i) { groups[current].classList.remove("current"); current = i; group.classList.add("current"); }
    });
  });

  document.addEventListener("keydown", function (e) {
    if (e.ctrlKey || e.metaKey || e.altKey || !groups.length) { return; }
    var target = e.target;
    var group = groups[current];
    if (target && target.tagName === "INPUT") {
      var owner = target.closest("article.group");
      if (e.key === "Enter") { e.preventDefault(); submit(owner, target); }
      else if (e.key === "Escape") { e.preventDefault(); target.blur(); select(groups.indexOf(owner)); }
      return;
    }
    if (target && target.tagName === "SUMMARY" && (e.key === "Enter" || e.key === " ")) { return; }
    var key = e.key;
    if (key === "j" || key === "ArrowDown") { select(current + 1); }
    else if (key === "k" || key === "ArrowUp") { select(current - 1); }
    else if (key === "n") { nextUndecided(); }
    else if (/^[0-9]$/.test(key) || key === "." || key === "," || key === "s") {
      var score = field(group, "score");
      score.value = key === "s" ? score.value : key;
      score.focus();
      score.setSelectionRange(score.value.length, score.value.length);
    }
    else if (key === "c") {
      var comment = field(group, "comment");
      comment.focus();
      comment.setSelectionRange(comment.value.length, comment.value.length);
    }
    else if (key === "a") {
      field(group, "score").value = group.getAttribute("data-provisional");
      submit(group, group);
    }
    else if (key === "u") { send(group, null, ""); }
    else { return; }
    e.preventDefault();
  });

  select(0);
})();
