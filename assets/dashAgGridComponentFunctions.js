/* pfscope: AG Grid cell renderers. Values are text children (React escapes them). */
var dagcomponentfuncs = (window.dashAgGridComponentFunctions = window.dashAgGridComponentFunctions || {});

dagcomponentfuncs.PfLink = function (props) {
  if (props.value === null || props.value === undefined || props.value === '') { return null; }
  var base = (props.colDef.cellRendererParams || {}).base || '/';
  return React.createElement('a', {href: base + encodeURIComponent(String(props.value))}, String(props.value));
};
