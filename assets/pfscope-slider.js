/* pfscope: a slider placed by time (the folder page's: its value is seconds since the first change,
   its stops the changes and the run's as-of) steps from stop to stop from the keyboard. Dash's slider
   with step=None snaps a drag to the nearest stop, but its keys move by 1 % of the range and commit
   that raw value: between two stops far apart the thumb would not move, and close stops would be
   skipped. The stops are in the data-positions attribute of an ancestor of the slider.
   The thumb moves at once; the value is set (and the page replayed) when the keys pause for
   KEY_PAUSE ms, so holding an arrow key asks the server once, not once per change. */
(function () {
  var KEYS = {ArrowRight: 1, ArrowUp: 1, ArrowLeft: -1, ArrowDown: -1, PageUp: 10, PageDown: -10,
              Home: -Infinity, End: Infinity};
  var KEY_PAUSE = 200;
  var moving = {};  // slider id -> {to: the value the keys chose, until: when to trust the thumb again}

  function place(thumb, min, max, value) {
    // Radix's placement of a thumb: left = p% plus an offset that keeps the thumb inside the track
    var wrap = thumb.parentElement;
    var p = max > min ? 100 * (value - min) / (max - min) : 0;
    var half = thumb.offsetWidth / 2;
    if (wrap && wrap.style) { wrap.style.left = 'calc(' + p + '% + ' + (half - p / 50 * half) + 'px)'; }
    thumb.setAttribute('aria-valuenow', String(value));
  }

  document.addEventListener('keydown', function (ev) {
    var thumb = ev.target;
    if (!(ev.key in KEYS) || !thumb || !thumb.closest || thumb.getAttribute('role') !== 'slider') { return; }
    var box = thumb.closest('[data-positions]');
    var slider = thumb.closest('.dash-slider-container');
    if (!box || !slider || !slider.id || !window.dash_clientside || !window.dash_clientside.set_props) { return; }
    var stops = JSON.parse(box.getAttribute('data-positions'));
    if (!stops.length) { return; }
    var id = slider.id;
    var now = parseFloat(thumb.getAttribute('aria-valuenow'));
    var m = moving[id];
    if (m && (m.timer || Date.now() < m.until)) { now = m.to; }  // the slider has not redrawn yet
    var at = 0;
    stops.forEach(function (p, k) { if (Math.abs(p - now) < Math.abs(stops[at] - now)) { at = k; } });
    var next = Math.max(0, Math.min(stops.length - 1, at + KEYS[ev.key]));
    ev.preventDefault();
    ev.stopPropagation();  // captured before React's listener: the slider's own key handling never runs
    if (next === at) { return; }
    var value = stops[next];
    place(thumb, stops[0], stops[stops.length - 1], value);
    if (m && m.timer) { clearTimeout(m.timer); }
    moving[id] = {to: value, until: 0, timer: setTimeout(function () {
      moving[id] = {to: value, until: Date.now() + 1000, timer: null};
      window.dash_clientside.set_props(id, {value: value});
    }, KEY_PAUSE)};
  }, true);
})();
