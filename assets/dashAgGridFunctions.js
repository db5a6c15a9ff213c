/* pfscope: AG Grid comparators, named in columnDefs as {"function": "<name>"} and called with
   (valueA, valueB, nodeA, nodeB, isDescending). */
var dagfuncs = (window.dashAgGridFunctions = window.dashAgGridFunctions || {});

function pfBySeconds(nodeA, nodeB, field) {
  var a = nodeA && nodeA.data ? nodeA.data[field] : null;
  var b = nodeB && nodeB.data ? nodeB.data[field] : null;
  var noA = a === null || a === undefined, noB = b === null || b === undefined;
  if (noA || noB) { return noA === noB ? 0 : (noA ? -1 : 1); }
  return a - b;
}

/* "open for": as a duration (its seconds), not as text. */
dagfuncs.PfOpenFor = function (valueA, valueB, nodeA, nodeB) {
  return pfBySeconds(nodeA, nodeB, 'open_for_s');
};

/* Text with numbers read as numbers: PFS1/1-2/2 before PFS1/1-2/10. */
dagfuncs.PfNatural = function (a, b) {
  return String(a === null || a === undefined ? '' : a).localeCompare(
    String(b === null || b === undefined ? '' : b), undefined, {numeric: true});
};

/* On a phone (640 px or less) the first columns shrink so that FID, path, store and overdue fit
   the screen (FID stays pinned; the others scroll sideways); wider again, they get their widths
   back. Applied to every grid of class pf-grid when it is drawn and when the window is resized.
   The column definitions are read back from the grid, so the user's sort, filter and order stay. */
var PF_PHONE_COLUMNS = {fid: {width: 72, minWidth: 60}, path: {width: 110, minWidth: 96, flex: null},
                        observer: {width: 80, minWidth: 64}, overdue: {width: 94, minWidth: 80}};
dagfuncs.PfPhoneColumns = function (params) {
  var api = params.api;
  var narrow = window.matchMedia('(max-width: 640px)').matches;
  if (!api || api.__pfNarrow === narrow) { return; }
  api.__pfNarrow = narrow;
  var defs = api.getColumnDefs();
  if (!api.__pfWide) {
    api.__pfWide = {};
    defs.forEach(function (d) {
      if (PF_PHONE_COLUMNS[d.field]) {
        api.__pfWide[d.field] = {width: d.width, minWidth: d.minWidth, flex: d.flex === undefined ? null : d.flex};
      }
    });
  }
  var use = narrow ? PF_PHONE_COLUMNS : api.__pfWide;
  api.setGridOption('columnDefs', defs.map(function (d) {
    var w = use[d.field];
    if (!w) { return d; }
    var out = Object.assign({}, d, w);
    if (out.flex === null) { delete out.flex; }
    return out;
  }));
};

(function () {
  var pending = {};
  function apply() {
    if (!window.dash_ag_grid || !window.dash_ag_grid.getApiAsync) { return; }
    document.querySelectorAll('.pf-grid[id]').forEach(function (el) {
      if (!el.querySelector('.ag-root-wrapper') || pending[el.id] === el) { return; }
      pending[el.id] = el;  // once per drawn grid (a new page draws a new element)
      window.dash_ag_grid.getApiAsync(el.id).then(function (api) { dagfuncs.PfPhoneColumns({api: api}); },
                                                 function () { delete pending[el.id]; });
    });
  }
  new MutationObserver(apply).observe(document.documentElement, {childList: true, subtree: true});
  window.addEventListener('resize', function () {
    if (!window.dash_ag_grid || !window.dash_ag_grid.getApi) { return; }
    document.querySelectorAll('.pf-grid[id]').forEach(function (el) {
      try { dagfuncs.PfPhoneColumns({api: window.dash_ag_grid.getApi(el.id)}); } catch (e) { /* not drawn yet */ }
    });
  });
})();
