// Live updates for `git swarm serve`: poll the cheap /fingerprint endpoint;
// when the refs changed, fetch the page and swap its <main> in place (no
// reload). Everything else on the page works without this script.
(function () {
  "use strict";
  var meta = document.querySelector('meta[name="swarm-fingerprint"]');
  if (!meta) { return; }
  var seen = meta.getAttribute("content");
  var busy = false;
  var status = document.getElementById("live");
  function say(text) { if (status) { status.textContent = text; } }
  function swap(html) {
    var doc = new DOMParser().parseFromString(html, "text/html");
    var fresh = doc.querySelector("main");
    var old = document.querySelector("main");
    if (fresh && old) { old.replaceWith(document.importNode(fresh, true)); }
    var top = doc.querySelector("header.top");
    var oldTop = document.querySelector("header.top");
    if (top && oldTop) { oldTop.replaceWith(document.importNode(top, true)); status = document.getElementById("live"); }
    var m = doc.querySelector('meta[name="swarm-fingerprint"]');
    if (m) { seen = m.getAttribute("content"); meta.setAttribute("content", seen); }
    document.documentElement.setAttribute("data-updates", String(Number(document.documentElement.getAttribute("data-updates") || "0") + 1));
  }
  function tick() {
    if (busy) { return; }
    busy = true;
    fetch("fingerprint", { cache: "no-store", credentials: "same-origin" })
      .then(function (r) { if (!r.ok) { throw new Error("HTTP " + r.status); } return r.text(); })
      .then(function (text) {
        var lines = text.split("\n");
        var reached = document.getElementById("reached");
        if (reached && lines[1]) { reached.textContent = lines[1]; }
        if (lines[0] === seen) { say("live"); return null; }
        return fetch(".", { cache: "no-store", credentials: "same-origin" })
          .then(function (r) { return r.text(); })
          .then(function (html) { swap(html); say("live: updated " + new Date().toLocaleTimeString()); });
      })
      .catch(function (e) { say("live updates paused: " + e.message); })
      .then(function () { busy = false; });
  }
  say("live");
  setInterval(tick, 2000);
})();
