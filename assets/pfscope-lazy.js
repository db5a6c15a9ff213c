/* pfscope: charts below the fold drawn when they are about to be seen, never before the first
   screen is ready (app/lazy_figure.py). A clientside callback queues each div[data-lazy] chart
   once Dash has it; when it comes within half a screen of the viewport (an IntersectionObserver),
   and plotly.js has drawn its placeholder, it gets its turn: its turn store is set and a second
   callback gives its graph the figure. Several due at once are drawn one at a time, the nearest
   first, each after the one before is drawn (plotly_afterplot with a layout that is no longer the
   placeholder's, meta "pf-lazy-pending"), so the page answers between two charts. A drawn chart's
   div gets data-drawn. */
(function () {
  var soon = window.requestIdleCallback || function (f) { return setTimeout(f, 16); };
  var waiting = [];  // {name, el, near}
  var given = [];  // the divs of the charts given their figure, until drawn
  var GIVE_UP_MS = 5000;  // a chart not drawn this long after its turn no longer holds the others
  var queued = false;
  var turns = 0;
  var observer = 'IntersectionObserver' in window
    ? new IntersectionObserver(function (entries) {
      entries.forEach(function (e) {
        waiting.forEach(function (w) { if (w.el === e.target) { w.near = e.isIntersecting; } });
      });
      schedule();
    }, {rootMargin: '50% 0px'})
    : null;

  function plot(el) {  // its plotly.js div, once plotly.js has drawn the placeholder in it
    var gd = el.querySelector('.js-plotly-plot');
    return gd && typeof gd.on === 'function' ? gd : null;
  }

  function away(el) {  // how far from the viewport (px): the nearest is drawn first
    var r = el.getBoundingClientRect();
    return r.top > window.innerHeight ? r.top - window.innerHeight : r.bottom < 0 ? -r.bottom : 0;
  }

  function go(w) {
    var gd = plot(w.el);
    waiting.splice(waiting.indexOf(w), 1);
    if (observer) { observer.unobserve(w.el); }
    w.el.__pfTurnAt = performance.now();
    given.push(w.el);
    var el = w.el;
    var done = function () {
      if (gd.layout && gd.layout.meta === 'pf-lazy-pending') { return; }
      gd.removeListener('plotly_afterplot', done);
      el.setAttribute('data-drawn', '');
      given = given.filter(function (g) { return g !== el; });
      schedule();
    };
    gd.on('plotly_afterplot', done);
    turns += 1;
    window.dash_clientside.set_props({type: 'pf-lazy-turn', graph: w.name}, {data: turns});
  }

  function drawing() {  // a chart given its figure and not drawn yet: the next one waits for it
    var now = performance.now();
    given = given.filter(function (el) {
      return el.isConnected && !el.hasAttribute('data-drawn') && now - el.__pfTurnAt < GIVE_UP_MS;
    });
    return given.length > 0;
  }

  function next() {
    queued = false;
    waiting = waiting.filter(function (w) { return w.el.isConnected; });
    var due = waiting.filter(function (w) { return (w.near || !observer) && plot(w.el); });
    if (!drawing() && due.length) {
      due.sort(function (a, b) { return away(a.el) - away(b.el); });
      go(due[0]);
    }
    // again while one is due but must wait (for plotly.js, or for the chart being drawn)
    if (waiting.some(function (w) { return w.near || !observer; })) { schedule(); }
  }

  function schedule() {
    if (!queued) { queued = true; soon(next, {timeout: 200}); }
  }

  function queue(name) {  // after Dash has drawn the chart's div (the callback may run just before)
    var el = document.querySelector('[data-lazy="' + name + '"]');
    if (!el) { requestAnimationFrame(function () { queue(name); }); return; }
    el.removeAttribute('data-drawn');
    waiting = waiting.filter(function (w) { return w.el !== el; });
    given = given.filter(function (g) { return g !== el; });
    waiting.push({name: name, el: el, near: false});
    if (observer) { observer.observe(el); } else { schedule(); }
  }

  window.pfscopeLazy = {queue: queue};
})();
