// Keeps the live parts of two pages up to date without reloading them, with no library:
// - a running job's page (#live, webui/status/templates/status/_live.html): fetches
//   GET /api/v1/jobs/{id}/live every data-poll-ms and fills the elements named by data-live (figures, the
//   paused line, the change list, which control buttons are enabled); it stops once the job is no longer
//   STARTED and none of its changes is pending, because then nothing changes any more until its final
//   report (a change still pending after the job's end is waited for, and the page says so). Its control
//   buttons are sent to POST /api/v1/jobs/{id}/control (the code their forms reach without a script), after
//   a confirmation for those that ask one (data-confirm: Stop, Fail), and the page is refreshed at once;
//   the Delete queued URIs form asks too before it is posted.
// - the running jobs page (#running-jobs): fetches the page itself and swaps in its table body, so the
//   list and its figures are rendered by one template only.
// Figures are formatted as webui/formatting.py formats them on the server, so an update looks the same
// as the page did when it was loaded; its words come in the page's language from the live section's
// data-words (English text -> translation, with %(name)s for the values), English where a word is missing.
// The API's phrases (why a control action cannot be taken, what holds the crawl back, that it waits between
// fetches for politeness: {code, values} beside the English) are said from data-phrases (code -> template in the page's language), nested ones first.
"use strict";
(function () {
  const UNITS = ["bytes", "KB", "MB", "GB", "TB", "PB"];
  let words = {};
  let phrases = {};

  // text in the page's language, its %(name)s replaced by values[name]
  function say(text, values) {
    return (words[text] || text).replace(/%\((\w+)\)s/g, (whole, name) => String((values || {})[name]));
  }

  // an API phrase in the page's language; the English the API gave beside it where the code is not known
  function speak(phrase, english) {
    if (!phrase || !(phrase.code in phrases)) return english || "";
    const values = {};
    for (const [name, value] of Object.entries(phrase.values || {})) {
      if (Array.isArray(value)) values[name] = value.map((part) => speak(part, "")).join(", ");
      else values[name] = value !== null && typeof value === "object" ? speak(value, "") : value;
    }
    return phrases[phrase.code].replace(/%\((\w+)\)s/g, (whole, name) => String(values[name]));
  }

  function count(value) {
    if (value === null || value === undefined) return "–";
    if (value === -1) return say("unlimited");
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

  // seconds as harvestdef/times.py's duration_text says them: "45 s", "4 min", "2 h 5 min", "3 d 4 h"
  function duration(seconds) {
    const whole = Math.max(0, Math.trunc(seconds || 0));
    if (whole < 60) return whole + " s";
    const minutes = Math.trunc(whole / 60);
    if (minutes < 60) return minutes + " min";
    const hours = Math.trunc(minutes / 60);
    if (hours < 24) return minutes % 60 ? `${hours} h ${minutes % 60} min` : `${hours} h`;
    const days = Math.trunc(hours / 24);
    return hours % 24 ? `${days} d ${hours % 24} h` : `${days} d`;
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

  // a stale frontier report's wake times are past: its snoozed queues show a dash instead
  function fillQueues(body, queues, stale) {
    body.replaceChildren();
    for (const queue of queues) {
      const row = document.createElement("tr");
      cell(row, queue.queue);
      cell(row, say(queue.state));
      cell(row, count(queue.current_size), "number");
      cell(row, count(queue.total_enqueues), "number");
      cell(row, count(queue.total_spend), "number");
      cell(row, queue.total_budget >= 0 ? count(queue.total_budget) : say("none"), "number");
      cell(row, count(queue.error_count), "number");
      cell(row, queue.wakes_in || (stale && queue.state === "snoozed" ? "–" : ""));
      body.appendChild(row);
    }
    if (!queues.length) {
      const row = document.createElement("tr");
      cell(row, say("none reported"), "muted");
      row.firstChild.colSpan = 8;
      body.appendChild(row);
    }
  }

  // the politeness wait: normal progress, in its own line beside the trouble
  function fillWaiting(line, waiting) {
    if (!line) return;
    line.hidden = !waiting;
    line.textContent = waiting ? speak(waiting.phrase, waiting.text) : "";
  }

  function fillHoldingBack(box, reasons) {
    box.hidden = reasons.length === 0;
    const list = box.querySelector("ul");
    list.replaceChildren();
    for (const why of reasons) {
      const item = document.createElement("li");
      item.dataset.reason = why.reason;
      item.textContent = speak(why.phrase, why.text);
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

  function fillChanges(body, changes) {
    if (!body) return;
    body.replaceChildren();
    for (const change of changes) {
      const row = document.createElement("tr");
      row.dataset.version = change.version;
      row.dataset.state = change.state;
      cell(row, String(change.version), "number");
      cell(row, change.kind);
      cell(row, speak(change.summary_phrase, change.summary), "change-what");
      cell(row, change.author);
      cell(row, when(change.created), "when");
      const state = document.createElement("td");
      state.className = "nowrap";
      const badge = document.createElement("span");
      badge.className = "change-state " + change.state;
      badge.textContent = say(change.state);
      state.appendChild(badge);
      if (change.applied) {
        const at = document.createElement("span");
        at.className = "muted";
        at.textContent = when(change.applied);
        state.append(" ", at);
      }
      row.appendChild(state);
      cell(row, change.reason || "");
      body.appendChild(row);
    }
    if (!changes.length) {
      const row = document.createElement("tr");
      row.className = "none";
      cell(row, say("No changes yet."), "muted");
      row.firstChild.colSpan = 7;
      body.appendChild(row);
    }
  }

  // The line above the newest page of changes: which versions it shows of how many, and the link to the
  // older ones once the page no longer holds them all (an older page, loaded on purpose, is left alone).
  function fillChangePages(section, live) {
    const line = section.querySelector("[data-changes-pages]");
    if (!line || line.dataset.olderPage) return;
    const changes = live.changes || [];
    const first = changes.length ? changes[0].version : null;
    const hasOlder = first !== null && first > 1;
    line.hidden = !hasOlder;
    if (!hasOlder) return;
    const range = line.querySelector("[data-changes-range]");
    if (range) range.textContent = say("Changes %(first)s to %(last)s of %(total)s.",
      {first: first, last: changes[changes.length - 1].version, total: live.changes_total});
    const older = line.querySelector('[data-changes-page="older"]');
    if (older) {
      const url = new URL(older.href, window.location.href);
      url.searchParams.set("changes_before", first);
      older.href = url.toString();
      older.hidden = false;
    }
  }

  function fillPaused(line, paused) {
    if (!line) return;
    line.hidden = !paused;
    line.textContent = paused ? say("Paused since %(time)s by %(name)s", {time: when(paused.since), name: say(paused.by)}) : "";
  }

  // Each control button enabled when its action is available now, its title saying why not otherwise.
  function fillActions(section, actions) {
    for (const form of section.querySelectorAll("form[data-action]")) {
      const availability = actions[form.dataset.action];
      const button = form.querySelector("button");
      if (!availability || !button || form.dataset.sending) continue;
      button.disabled = !availability.available;
      button.title = availability.available ? "" : speak(availability.why_not_phrase, availability.why_not);
    }
  }

  function fillDomains(body, domains) {
    if (!body) return;
    body.replaceChildren();
    for (const domain of domains) {
      const row = document.createElement("tr");
      cell(row, domain.domain);
      cell(row, count(domain.objects), "number");
      cell(row, size(domain.bytes), "number");
      body.appendChild(row);
    }
    if (!domains.length) {
      const row = document.createElement("tr");
      cell(row, say("none counted yet"), "muted");
      row.firstChild.colSpan = 3;
      body.appendChild(row);
    }
  }

  function statusClasses(counts) {
    if (!counts) return say("none counted yet");
    return Object.keys(counts.by_class).sort()
      .map(name => name.replace(/_/g, " ") + " " + count(counts.by_class[name])).join(" · ");
  }

  function fillJob(section, live) {
    setText(section, "crawler_status", live.crawler ? (live.crawler.status || "?") : say("no report yet"));
    setText(section, "progress", live.crawler && live.crawler.progress !== null
      ? live.crawler.progress.toFixed(1) + " %" : "–");
    setText(section, "downloaded", count(live.downloaded));
    setText(section, "queued", count(live.queued));
    setText(section, "failed", count(live.failed));
    setText(section, "status_classes", statusClasses(live.status_counts));
    setText(section, "bytes", size(live.bytes));
    setText(section, "bytes_rate", live.rates ? size(live.rates.bytes_per_second.now) + " · "
      + size(live.rates.bytes_per_second.average) : "–");
    setText(section, "docs_rate", live.rates ? live.rates.documents_per_second.now + " · "
      + live.rates.documents_per_second.average : "–");
    const queues = live.queue_counts;
    setText(section, "queue_counts", queues ? [queues.active, queues.retired, queues.exhausted, queues.total]
      .join(" · ") : "–");
    setText(section, "reported_at", when(live.reported_at));
    let frontier = say("no frontier report yet");
    if (live.frontier_reported_at && live.frontier_stale) {
      frontier = say("as of %(age)s ago (%(time)s), older than this page's refresh: wake times left out",
        {age: duration(live.frontier_age_seconds), time: when(live.frontier_reported_at)});
    } else if (live.frontier_reported_at) {
      frontier = say("reported %(time)s", {time: when(live.frontier_reported_at)});
    }
    setText(section, "frontier_reported_at", frontier);
    setText(section, "log", live.log.map(line => line + "\n").join(""));
    setText(section, "chart_note", say(live.history.length === 1 ? "%(num)s progress sample" : "%(num)s progress samples",
      {num: count(live.history.length)}));
    fillHoldingBack(element(section, "holding_back"), live.holding_back);
    fillWaiting(element(section, "waiting"), live.waiting);
    fillQueues(element(section, "queues"), live.queues, live.frontier_stale);
    fillDomains(element(section, "domains"), live.domains);
    drawChart(element(section, "chart"), live.history);
    fillChanges(element(section, "changes"), live.changes);
    fillChangePages(section, live);
    fillPaused(element(section, "paused"), live.paused);
    fillActions(section, live.actions);
  }

  // A GET that gives up after ``ms``: a request the server or the network never answers would otherwise
  // hold a poll forever, and the page would go on showing what it last drew as if it were current.
  // ``read`` takes the body (response => response.json(), say) within the same ``ms``: a body that stalls
  // after its headers would hold the poll as long.
  function fetchWithin(url, options, ms, read) {
    const abort = new AbortController();
    const timer = setTimeout(() => abort.abort(new Error("no answer within " + Math.round(ms / 1000) + " s")), ms);
    return fetch(url, Object.assign({signal: abort.signal}, options))
      .then(response => response.ok ? read(response) : Promise.reject(new Error("HTTP " + response.status)))
      .finally(() => clearTimeout(timer));
  }

  // Polls the live view every data-poll-ms while the job is STARTED; returns a function that polls at once
  // (after a control action), which does nothing more once the job has ended.
  function pollJob(section) {
    const url = section.dataset.liveUrl;
    const period = Number(section.dataset.pollMs || 5000);
    const patience = Math.max(10000, 4 * period);  // how long one poll may wait for its answer
    let timer = null;
    let ended = false;
    // one timer at most: a poll asked for at once replaces the one that was due
    const schedule = () => {
      clearTimeout(timer);
      timer = setTimeout(tick, period);
    };
    const tick = () => {
      clearTimeout(timer);
      if (ended) return;
      fetchWithin(url, {credentials: "same-origin", headers: {Accept: "application/json"}}, patience,
                  response => response.json())
        .then(live => {
          if (ended) return;
          fillJob(section, live);
          if (live.state === "STARTED") {
            setText(section, "note", say("updated %(time)s", {time: when(new Date().toISOString())}));
            schedule();
          } else {
            section.dataset.state = live.state;
            // the heading's status, drawn while the job ran, says how it ended
            const badge = document.querySelector("[data-job-status]");
            if (badge) {
              badge.textContent = live.state;
              badge.className = "status " + live.state;
            }
            // a job that has ended takes no more changes: its forms go, its buttons are disabled
            const forms = element(section, "change_forms");
            if (forms) forms.hidden = true;
            // Every change of an ended job is settled: its final report settles what its crawl handled and
            // refuses the rest, and the scheduler's tick refuses what any other end left pending. So the
            // page keeps asking, however long that takes, while a change is still pending, and says so:
            // the list never stops on a pending change.
            // changes_pending names the oldest pending ones, also those older than the newest page shown. The
            // rows shown count too: the server reads the page and changes_pending one after the other, and an
            // answer that lands between the two reads leaves rows pending beside an empty changes_pending.
            const shown = (live.changes || []).filter(change => change.state === "pending").map(change => change.version);
            const pending = Array.from(new Set((live.changes_pending || []).concat(shown))).sort((a, b) => a - b);
            if (pending.length) {
              setText(section, "note", say("the job is %(state)s now; waiting for the answer to change %(versions)s",
                {state: live.state, versions: pending.join(", ")}));
              schedule();
            } else {
              ended = true;
              setText(section, "note", say("the job is %(state)s now: reload the page for its results", {state: live.state}));
            }
          }
        })
        .catch(error => {
          // a failed update keeps the figures shown and tries again: the web UI may be restarting
          setText(section, "note", say("update failed (%(error)s), trying again", {error: error.message}));
          schedule();
        });
    };
    schedule();
    return tick;
  }

  // The control buttons: each action POSTed to the API with the session's CSRF token; a refusal (409 naming
  // the state, say) is shown under the buttons, and the page polls at once either way.
  function sendControls(section, pollNow) {
    const bar = section.querySelector(".control-actions");
    if (!bar) return;
    const error = element(section, "control_error");
    const token = document.querySelector('meta[name="csrf-token"]').content;
    bar.addEventListener("submit", event => {
      const form = event.target;
      event.preventDefault();
      if (form.dataset.confirm && !window.confirm(form.dataset.confirm)) return;
      const button = form.querySelector("button");
      button.disabled = true;
      form.dataset.sending = "1";
      fetch(bar.dataset.controlUrl, {
        method: "POST", credentials: "same-origin",
        headers: {"Content-Type": "application/json", Accept: "application/json", "X-CSRF-Token": token},
        body: JSON.stringify({action: form.dataset.action}),
      })
        .then(response => response.json().catch(() => ({})).then(answer => {
          if (response.ok) {
            error.hidden = true;
            error.textContent = "";
          } else {
            error.hidden = false;
            error.textContent = answer.error ? answer.error.message : say("refused (HTTP %(status)s)", {status: response.status});
          }
        }))
        .catch(failure => {
          error.hidden = false;
          error.textContent = say("could not send the %(action)s: %(reason)s", {action: form.dataset.action, reason: failure.message});
        })
        .finally(() => {
          delete form.dataset.sending;
          pollNow();
        });
    });
  }

  function pollRunning(table) {
    const period = Number(table.dataset.pollMs || 5000);
    const tick = () => {
      fetchWithin(window.location.href, {credentials: "same-origin", headers: {Accept: "text/html"}},
                  Math.max(10000, 4 * period), response => response.text())
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
      words = JSON.parse(section.dataset.words || "{}");
      phrases = JSON.parse(section.dataset.phrases || "{}");
      const initial = document.getElementById("live-initial");
      if (initial) drawChart(element(section, "chart"), JSON.parse(initial.textContent).history);
      sendControls(section, pollJob(section));
    }
    // a change form that cannot be taken back (Delete queued URIs) asks first, as Stop and Fail do; it is
    // posted as a form, not by sendControls
    document.querySelectorAll("form.change-form[data-confirm]").forEach(form => {
      form.addEventListener("submit", event => {
        if (!window.confirm(form.dataset.confirm)) event.preventDefault();
      });
    });
    const running = document.getElementById("running-jobs");
    if (running) pollRunning(running);
  });
})();
