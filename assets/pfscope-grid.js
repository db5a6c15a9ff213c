/* pfscope: AG Grid's bundle (1.3 MB) only on the pages that draw a grid (app/lazy_grid.py takes it
   out of every page and names it in <meta name="pfscope-grid-src">). Until it is needed this stands
   in for the dash_ag_grid library: its AgGrid loads the bundle when a grid is first drawn, then
   draws the real AgGrid with the same props. Dash waits for the bundle before it runs a callback
   that involves the grid (the component's _dashprivate_isLazyComponentReady promise). */
(function () {
  var meta = document.querySelector('meta[name="pfscope-grid-src"]');
  var React = window.React;
  if (window.dash_ag_grid || !meta || !React) { return; }  // loaded the usual way: nothing to do
  var stand = {};
  var real = null;
  var loading = null;

  function load() {
    if (!loading) {
      loading = new Promise(function (resolve, reject) {
        var script = document.createElement('script');
        script.src = meta.getAttribute('content');
        script.onload = function () {
          real = window.dash_ag_grid;
          window.dash_ag_grid = stand;  // the renderer keeps drawing the same component type
          Object.keys(real).forEach(function (k) { if (k !== 'AgGrid') { stand[k] = real[k]; } });
          AgGrid.dashPersistence = real.AgGrid.dashPersistence || AgGrid.dashPersistence;
          resolve(real);
        };
        script.onerror = function () {
          loading = null;
          reject(new Error('pfscope: the grid could not be loaded from ' + script.src));
        };
        document.head.appendChild(script);
      });
    }
    return loading;
  }

  function AgGrid(props) {
    var state = React.useState(function () { return real ? real.AgGrid : null; });
    var Grid = state[0];
    var setGrid = state[1];
    var failed = React.useState(null);
    React.useEffect(function () {
      if (Grid) { return undefined; }
      var live = true;
      load().then(function (lib) { if (live) { setGrid(function () { return lib.AgGrid; }); } },
                  function (e) { if (live) { failed[1](String(e.message || e)); } });
      return function () { live = false; };
    }, []);
    if (Grid) { return React.createElement(Grid, props); }
    return React.createElement('div', {id: props.id, className: (props.className || '') + ' pf-grid-loading',
                                       style: props.style, role: 'status'},
                               failed[0] || 'Loading the grid…');
  }
  AgGrid.dashRenderType = true;
  AgGrid.dashPersistence = {persisted_props: ['selectedRows'], persistence_type: 'local'};
  Object.defineProperty(AgGrid, '_dashprivate_isLazyComponentReady', {
    get: function () { return real ? true : load(); }
  });
  stand.AgGrid = AgGrid;
  window.dash_ag_grid = stand;
})();
