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

/* The forecast: by the time the replica will be in sync (its seconds); "not within 14 days" (no
   time) after every time, and a replica without a forecast after those. */
dagfuncs.PfForecast = function (valueA, valueB, nodeA, nodeB) {
  function key(node) {
    var d = node && node.data ? node.data : {};
    var s = d.forecast_s;
    if (s !== null && s !== undefined && !isNaN(s)) { return [0, s]; }
    return [d.forecast ? 1 : 2, 0];
  }
  var a = key(nodeA), b = key(nodeB);
  return a[0] !== b[0] ? a[0] - b[0] : a[1] - b[1];
};

/* Text with numbers read as numbers: PFS1/1-2/2 before PFS1/1-2/10. */
dagfuncs.PfNatural = function (a, b) {
  return String(a === null || a === undefined ? '' : a).localeCompare(
    String(b === null || b === undefined ? '' : b), undefined, {numeric: true});
};

/* On a phone (640 px or less) the grid shows one column: each entry as a card (PfEntryCard)
   with every value in full, as a column of a table would cut them ("1-2…", "PFD…"); wider again,
   the columns come back. The wide columns are those whose definition is not hidden; the card
   column (colId "card") is hidden by definition. Applied to every grid of class pf-grid when it
   is drawn and when the window is resized; the user's sort and filters stay. */
var PF_CARD = 'card';
dagfuncs.PfPhoneColumns = function (params) {
  var api = params.api;
  var narrow = window.matchMedia('(max-width: 640px)').matches;
  if (!api || api.__pfNarrow === narrow) { return; }
  var cols = api.getColumns() || [];
  if (!cols.some(function (c) { return c.getColId() === PF_CARD; })) { return; }  // a grid without cards
  api.__pfNarrow = narrow;
  var wide = cols.filter(function (c) { return c.getColId() !== PF_CARD && !c.getColDef().hide; })
                 .map(function (c) { return c.getColId(); });
  api.setColumnsVisible(wide, !narrow);
  api.setColumnsVisible([PF_CARD], narrow);
  api.setGridOption('floatingFiltersHeight', narrow ? 0 : undefined);  // the cards have no filter row
  var root = document.getElementById(api.__pfId || '');
  if (root) { root.classList.toggle('pf-grid-cards', narrow); }
};

(function () {
  var pending = {};
  function apply() {
    if (!window.dash_ag_grid || !window.dash_ag_grid.getApiAsync) { return; }
    document.querySelectorAll('.pf-grid[id]').forEach(function (el) {
      if (!el.querySelector('.ag-root-wrapper') || pending[el.id] === el) { return; }
      pending[el.id] = el;  // once per drawn grid (a new page draws a new element)
      window.dash_ag_grid.getApiAsync(el.id).then(function (api) { api.__pfId = el.id; dagfuncs.PfPhoneColumns({api: api}); },
                                                 function () { delete pending[el.id]; });
    });
  }
  new MutationObserver(apply).observe(document.documentElement, {childList: true, subtree: true});
  window.addEventListener('resize', function () {
    if (!window.dash_ag_grid || !window.dash_ag_grid.getApi) { return; }
    document.querySelectorAll('.pf-grid[id]').forEach(function (el) {
      try { var api = window.dash_ag_grid.getApi(el.id); api.__pfId = el.id; dagfuncs.PfPhoneColumns({api: api}); } catch (e) { /* not drawn yet */ }
    });
  });
})();
