// The reader's own time beside each time the server wrote in UTC (webui/formatting.py's `when` filter:
// <time datetime="2026-11-27T14:05:33Z">2026-11-27 14:05:33 UTC</time>). Where the browser's zone differs
// from UTC at that instant, a muted "(15:05:33 CET)" follows it, with the date when the date differs too.
// Times put into the page later (the running-jobs table that live.js refreshes) get theirs as they arrive.
(function () {
  "use strict";

  const parts = new Intl.DateTimeFormat("en-GB", {
    year: "numeric", month: "2-digit", day: "2-digit", hour: "2-digit", minute: "2-digit", second: "2-digit",
    hourCycle: "h23", timeZoneName: "short",
  });

  function local(moment) {
    const part = {};
    for (const { type, value } of parts.formatToParts(moment)) part[type] = value;
    return { date: `${part.year}-${part.month}-${part.day}`, time: `${part.hour}:${part.minute}:${part.second}`,
             zone: part.timeZoneName };
  }

  function annotate(element) {
    if (element.dataset.local) return;
    element.dataset.local = "done";
    const moment = new Date(element.getAttribute("datetime"));
    if (isNaN(moment) || moment.getTimezoneOffset() === 0) return;
    const here = local(moment);
    const utcDate = element.getAttribute("datetime").slice(0, 10);
    const note = document.createElement("span");
    note.className = "local-time";
    note.textContent = `(${here.date === utcDate ? "" : here.date + " "}${here.time} ${here.zone})`;
    element.after(" ", note);
  }

  function annotateWithin(root) {
    if (root.matches && root.matches("time[datetime]")) annotate(root);
    if (root.querySelectorAll) root.querySelectorAll("time[datetime]").forEach(annotate);
  }

  function start() {
    annotateWithin(document.body);
    new MutationObserver((records) => records.forEach((record) => record.addedNodes.forEach(annotateWithin)))
      .observe(document.body, { childList: true, subtree: true });
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
