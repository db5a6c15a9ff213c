/* pfscope: after a page is drawn by Dash, scroll to the address's #anchor (a glossary term, a
   section), since the element did not exist when the browser first looked for it. */
(function () {
  var done = null;
  function scrollToHash() {
    var id = decodeURIComponent((window.location.hash || '').slice(1));
    if (!id || done === window.location.href) { return; }
    var el = document.getElementById(id);
    if (el) {
      done = window.location.href;
      el.scrollIntoView({block: 'start'});
      el.classList.add('pf-targeted');
    }
  }
  new MutationObserver(scrollToHash).observe(document.documentElement, {childList: true, subtree: true});
  window.addEventListener('hashchange', function () { done = null; scrollToHash(); });
})();

/* pfscope: a "CSV" button on every table of the dashboard: the rows shown, as text (the glossary
   "?" links left out); a value that a spreadsheet would run as a formula is quoted with a '. */
(function () {
  function text(el) {
    var copy = el.cloneNode(true);
    copy.querySelectorAll('.pf-term').forEach(function (t) { t.remove(); });
    return (copy.innerText !== undefined ? copy.innerText : copy.textContent).replace(/\s+/g, ' ').trim();
  }
  function field(v) {
    if (/^[=+@\t\r]/.test(v) || /^-[^0-9]/.test(v)) { v = "'" + v; }
    return /[",\n;]/.test(v) ? '"' + v.replace(/"/g, '""') + '"' : v;
  }
  function csv(table) {
    var lines = [];
    table.querySelectorAll('tr').forEach(function (tr) {
      var cells = Array.prototype.map.call(tr.querySelectorAll('th, td'), function (c) { return field(text(c)); });
      if (cells.length) { lines.push(cells.join(',')); }
    });
    return lines.join('\r\n') + '\r\n';
  }
  function addButtons() {
    document.querySelectorAll('table.pf-table[id]').forEach(function (table) {
      var id = table.id + '-csv';
      if (document.getElementById(id)) { return; }
      var button = document.createElement('button');
      button.type = 'button';
      button.id = id;
      button.className = 'pf-csv';
      button.textContent = 'CSV';
      button.title = 'Download this table as CSV (the rows shown)';
      button.addEventListener('click', function () {
        var blob = new Blob(['\ufeff' + csv(table)], {type: 'text/csv;charset=utf-8'});
        var a = document.createElement('a');
        a.href = URL.createObjectURL(blob);
        a.download = 'pfscope-' + table.id.replace(/^pf-/, '') + '.csv';
        document.body.appendChild(a);
        a.click();
        setTimeout(function () { URL.revokeObjectURL(a.href); a.remove(); }, 0);
      });
      table.parentNode.insertBefore(button, table);
    });
  }
  new MutationObserver(addButtons).observe(document.documentElement, {childList: true, subtree: true});
})();

/* pfscope: a link inside a frozen section (app/frozen.py: markup drawn as one component) moves
   within the page as dcc.Link does: the address changes and Dash draws the new page, no reload. */
(function () {
  document.addEventListener('click', function (ev) {
    var a = ev.target && ev.target.closest ? ev.target.closest('a[data-pf-link]') : null;
    if (!a || ev.defaultPrevented || ev.button !== 0 || ev.metaKey || ev.shiftKey || ev.altKey || ev.ctrlKey) { return; }
    if (a.target && a.target !== '_self') { return; }
    ev.preventDefault();
    window.history.pushState({}, '', a.getAttribute('href'));
    window.dispatchEvent(new CustomEvent('_dashprivate_pushstate'));
    window.scrollTo(0, 0);
  });
})();

/* pfscope: the navbar's auto-refresh switch. While it is on (its choice is kept in this browser),
   the page asks /latest.json every minute (?refresh=SECONDS sets another period, at least 2) and
   reloads when the dashboard serves a newer run than the one drawn. */
(function () {
  var timer = null;
  function on() {
    var box = document.querySelector('#pf-auto-refresh input[type=checkbox]');
    return !!(box && box.checked);
  }
  function period() {
    var asked = parseFloat(new URLSearchParams(window.location.search).get('refresh'));
    return 1000 * (isFinite(asked) && asked >= 2 ? asked : 60);
  }
  function check() {
    var shown = document.getElementById('pf-run');
    if (!on() || !shown) { return; }
    fetch('/latest.json', {cache: 'no-store', credentials: 'same-origin'})
      .then(function (r) { return r.ok ? r.json() : null; })
      .then(function (latest) {
        if (latest && latest.run_id && latest.run_id !== shown.getAttribute('data-run-id')) { window.location.reload(); }
      })
      .catch(function () { /* the server is restarting: try again at the next tick */ });
  }
  function arm() {
    if (timer) { clearInterval(timer); timer = null; }
    if (on()) { timer = setInterval(check, period()); }
  }
  document.addEventListener('change', function (ev) {
    if (ev.target && ev.target.closest && ev.target.closest('#pf-auto-refresh')) { arm(); }
  });
  new MutationObserver(function () { if (on() !== !!timer) { arm(); } })
    .observe(document.documentElement, {childList: true, subtree: true});
})();
