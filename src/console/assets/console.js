// Live updates without a build chain: while an execution runs, fetch its page's live part
// again every second and swap it in, keeping open event details open.
(function () {
  var live = document.getElementById("live");
  if (!live || live.dataset.running !== "true") return;
  var url = live.dataset.src;
  function tick() {
    var open = Array.prototype.map.call(
      live.querySelectorAll("details[open][data-key]"),
      function (d) { return d.dataset.key; });
    fetch(url, { cache: "no-store" })
      .then(function (r) { return r.text(); })
      .then(function (html) {
        var focused = document.activeElement && live.contains(document.activeElement);
        if (focused) { setTimeout(tick, 1000); return; }
        live.innerHTML = html;
        open.forEach(function (k) {
          var d = live.querySelector('details[data-key="' + k + '"]');
          if (d) d.open = true;
        });
        var inner = live.querySelector("[data-running]");
        if (inner && inner.dataset.running === "true") setTimeout(tick, 1000);
        else document.title = document.title.replace("RUNNING", "done");
      })
      .catch(function () { setTimeout(tick, 2000); });
  }
  setTimeout(tick, 1000);
})();
