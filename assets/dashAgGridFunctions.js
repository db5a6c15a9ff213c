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
