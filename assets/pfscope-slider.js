/* pfscope: a slider placed by time (the folder page's: its value is seconds since the first change,
   its stops the changes and the run's as-of) steps from stop to stop from the keyboard. Dash's slider
   with step=None snaps a drag to the nearest stop, but its keys move by 1 % of the range and commit
   that raw value: between two stops far apart the thumb would not move, and close stops would be
   skipped. The stops are in the data-positions attribute of an ancestor of the slider. */
(function () {
  var KEYS = {ArrowRight: 1, ArrowUp: 1, ArrowLeft: -1, ArrowDown: -1, PageUp: 10, PageDown: -10,
              Home: -Infinity, End: Infinity};
  document.addEventListener('keydown', function (ev) {
    var thumb = ev.target;
    if (!(ev.key in KEYS) || !thumb || !thumb.closest || thumb.getAttribute('role') !== 'slider') { return; }
    var box = thumb.closest('[data-positions]');
    var slider = thumb.closest('.dash-slider-container');
    if (!box || !slider || !slider.id || !window.dash_clientside || !window.dash_clientside.set_props) { return; }
    var stops = JSON.parse(box.getAttribute('data-positions'));
    if (!stops.length) { return; }
    var now = parseFloat(thumb.getAttribute('aria-valuenow'));
    var at = 0;
    stops.forEach(function (p, k) { if (Math.abs(p - now) < Math.abs(stops[at] - now)) { at = k; } });
    var next = Math.max(0, Math.min(stops.length - 1, at + KEYS[ev.key]));
    ev.preventDefault();
    ev.stopPropagation();  // captured before React's listener: the slider's own key handling never runs
    if (next !== at) { window.dash_clientside.set_props(slider.id, {value: stops[next]}); }
  }, true);
})();
