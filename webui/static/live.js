// Keeps the live parts of two pages up to date without reloading them, with no library:
// - a running job's page (#live, webui/status/templates/status/_live.html): fetches
//   GET /api/v1/jobs/{id}/live every data-poll-ms and fills the elements named by data-live; it stops
//   once the job is no longer STARTED, because then nothing changes any more until its final report.
// - the running jobs page (#running-jobs): fetches the page itself and swaps in its table body, so the
//   list and its figures are rendered by one template only.
// Figures are formatted as webui/formatting.py formats them on the server, so an update looks the same
// as the page did when it was loaded.
"use strict";
(function () {
  const UNITS = ["bytes", "KB", "MB", "GB", "TB", "PB"];

  function count(value) {
    if (value === null || value === undefined) return "–";
    if (value === -1) return "unlimited";
    return Number.isInteger(value) ? value.toLocaleString("en-US")
      : value.toLocaleString("en-US", {minimumFractionDigits: 1, maximumFractionDigits: 1});
  }

  function size(value) {
    if (value === null || value === undefined) return "–";
    let amount = value;
    for (const unit of UNITS) {
      if (Math.abs(amount) < 1000 || unit === UNITS[UNITS.length - 1]) {
        return unit === "bytes" ? Math.trunc(amount).toLocaleString("en-US") + " bytes"
          : amount.toLocaleString("en-US", {minimumFractionDigits: 1, maximumFractionDigits: 1}) + " " + unit;
      }
      amount /= 1000;
    }
    return String(value);
  }

  function when(iso) {
    if (!iso) return "–";
    const moment = new Date(iso);
    return isNaN(moment) ? iso : moment.toISOString().slice(0, 19).replace("T", " ") + " UTC";
  }

  function element(root, name) {
    return root.querySelector('[data-live="' + name + '"]');
  }

  function setText(root, name, text) {
    const target = element(root, name);
    if (target) target.textContent = text;
  }

  function cell(row, text, className) {
    const td = document.createElement("td");
    td.textContent = text;
    if (className) td.className = className;
    row.appendChild(td);
  }

  function fillQueues(body, queues) {
    body.replaceChildren();
    for (const queue of queues) {
      const row = document.createElement("tr");
      cell(row, queue.queue);
      cell(row, queue.state);
      cell(row, count(queue.current_size), "number");
      cell(row, count(queue.total_enqueues), "number");
      cell(row, count(queue.total_spend), "number");
      cell(row, queue.total_budget >= 0 ? count(queue.total_budget) : "none", "number");
      cell(row, count(queue.error_count), "number");
      cell(row, queue.wakes_in || "");
      body.appendChild(row);
    }
    if (!queues.length) {
      const row = document.createElement("tr");
      cell(row, "none reported", "muted");
      row.firstChild.colSpan = 8;
      body.appendChild(row);
    }
  }

  function fillHoldingBack(box, reasons) {
    box.hidden = reasons.length === 0;
    const list = box.querySelector("ul");
    list.replaceChildren();
    for (const why of reasons) {
      const item = document.createElement("li");
      item.dataset.reason = why.reason;
      item.textContent = why.text;
      list.appendChild(item);
    }
  }

  // Downloaded and queued URIs against elapsed seconds, as two polylines scaled to the largest value.
  function drawChart(svg, history) {
    const width = 640, height = 200, left = 48, bottom = 20, top = 8;
    const ns = "http://www.w3.org/2000/svg";
    svg.replaceChildren();
    if (history.length === 0) return;
    const seconds = history.map(s => s.elapsed_seconds || 0);
    const most = Math.max(1, ...history.map(s => Math.max(s.downloaded || 0, s.queued || 0)));
    const first = Math.min(...seconds), last = Math.max(first + 1, ...seconds);
    const x = t => left + (width - left - 4) * (t - first) / (last - first);
    const y = v => top + (height - top - bottom) * (1 - v / most);
    const axis = document.createElementNS(ns, "path");
    axis.setAttribute("d", `M${left} ${top} V${height - bottom} H${width - 4}`);
    axis.setAttribute("class", "axis");
    axis.setAttribute("fill", "none");
    svg.appendChild(axis);
    [["downloaded", "series-0"], ["queued", "series-1"]].forEach(([field, className]) => {
      const line = document.createElementNS(ns, "polyline");
      line.setAttribute("points", history.map(s => `${x(s.elapsed_seconds || 0).toFixed(1)},${y(s[field] || 0).toFixed(1)}`).join(" "));
      line.setAttribute("class", "line " + className);
      line.dataset.series = field;
      svg.appendChild(line);
    });
    const label = (text, lx, ly, anchor) => {
      const node = document.createElementNS(ns, "text");
      node.setAttribute("x", lx);
      node.setAttribute("y", ly);
      node.setAttribute("text-anchor", anchor);
      node.textContent = text;
      svg.appendChild(node);
    };
    label(count(most), left - 4, top + 10, "end");
    label("0", left - 4, height - bottom, "end");
    label(`${first} s`, left, height - 4, "start");
    label(`${last} s`, width - 4, height - 4, "end");
  }

  function fillJob(section, live) {
    setText(section, "crawler_status", live.crawler ? (live.crawler.status || "?") : "no report yet");
    setText(section, "progress", live.crawler && live.crawler.progress !== null
      ? live.crawler.progress.toFixed(1) + " %" : "–");
    setText(section, "downloaded", count(live.downloaded));
    setText(section, "queued", count(live.queued));
    setText(section, "bytes", size(live.bytes));
    setText(section, "bytes_rate", live.rates ? size(live.rates.bytes_per_second.now) + " · "
      + size(live.rates.bytes_per_second.average) : "–");
    setText(section, "docs_rate", live.rates ? live.rates.documents_per_second.now + " · "
      + live.rates.documents_per_second.average : "–");
    const queues = live.queue_counts;
    setText(section, "queue_counts", queues ? [queues.active, queues.retired, queues.exhausted, queues.total]
      .join(" · ") : "–");
    setText(section, "reported_at", when(live.reported_at));
    setText(section, "frontier_reported_at", live.frontier_reported_at ? "reported " + when(live.frontier_reported_at)
      : "no frontier report yet");
    setText(section, "log", live.log.map(line => line + "\n").join(""));
    setText(section, "chart_note", live.history.length + " progress sample" + (live.history.length === 1 ? "" : "s"));
    fillHoldingBack(element(section, "holding_back"), live.holding_back);
    fillQueues(element(section, "queues"), live.queues);
    drawChart(element(section, "chart"), live.history);
  }

  function pollJob(section) {
    const url = section.dataset.liveUrl;
    const period = Number(section.dataset.pollMs || 5000);
    const tick = () => {
      fetch(url, {credentials: "same-origin", headers: {Accept: "application/json"}})
        .then(response => response.ok ? response.json() : Promise.reject(new Error("HTTP " + response.status)))
        .then(live => {
          fillJob(section, live);
          if (live.state === "STARTED") {
            setText(section, "note", "updated " + when(new Date().toISOString()));
            setTimeout(tick, period);
          } else {
            section.dataset.state = live.state;
            setText(section, "note", "the job is " + live.state + " now: reload the page for its results");
          }
        })
        .catch(error => {
          // a failed update keeps the figures shown and tries again: the web UI may be restarting
          setText(section, "note", "update failed (" + error.message + "), trying again");
          setTimeout(tick, period);
        });
    };
    setTimeout(tick, period);
  }

  function pollRunning(table) {
    const period = Number(table.dataset.pollMs || 5000);
    const tick = () => {
      fetch(window.location.href, {credentials: "same-origin", headers: {Accept: "text/html"}})
        .then(response => response.ok ? response.text() : Promise.reject(new Error("HTTP " + response.status)))
        .then(text => {
          const fresh = new DOMParser().parseFromString(text, "text/html").querySelector("#running-jobs tbody");
          if (fresh) table.querySelector("tbody").replaceWith(document.importNode(fresh, true));
        })
        .catch(() => {})  // the rows shown stay; the next turn tries again
        .finally(() => setTimeout(tick, period));
    };
    setTimeout(tick, period);
  }

  document.addEventListener("DOMContentLoaded", () => {
    const section = document.getElementById("live");
    if (section) {
      const initial = document.getElementById("live-initial");
      if (initial) drawChart(element(section, "chart"), JSON.parse(initial.textContent).history);
      pollJob(section);
    }
    const running = document.getElementById("running-jobs");
    if (running) pollRunning(running);
  });
})();
