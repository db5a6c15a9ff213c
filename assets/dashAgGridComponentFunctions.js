/* pfscope: AG Grid cell renderers. Values are text children (React escapes them). */
var dagcomponentfuncs = (window.dashAgGridComponentFunctions = window.dashAgGridComponentFunctions || {});

dagcomponentfuncs.PfLink = function (props) {
  if (props.value === null || props.value === undefined || props.value === '') { return null; }
  var base = (props.colDef.cellRendererParams || {}).base || '/';
  return React.createElement('a', {href: base + encodeURIComponent(String(props.value))}, String(props.value));
};

/* A replica's health as a coloured badge; the words say it, the colour only adds. */
dagcomponentfuncs.PfHealth = function (props) {
  var v = props.value === null || props.value === undefined ? '' : String(props.value);
  if (!v) { return null; }
  var key = v.split(' (')[0].replace(/ /g, '_');
  return React.createElement('span', {className: 'pf-badge pf-health-' + key + (v.indexOf('(') >= 0 ? ' pf-health-stale' : '')}, v);
};
