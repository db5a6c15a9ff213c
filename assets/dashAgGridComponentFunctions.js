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

function pfText(v) { return v === null || v === undefined ? '' : String(v); }

/* A replica's forecast, linked to its explanation (/forecast?fid=&store=: its requests, sources
   and the transit times it used). */
function pfForecastHref(d) {
  return '/forecast?fid=' + encodeURIComponent(pfText(d.fid)) + '&store=' + encodeURIComponent(pfText(d.observer));
}
dagcomponentfuncs.PfForecastLink = function (props) {
  var v = pfText(props.value), d = props.data || {};
  return v ? React.createElement('a', {href: pfForecastHref(d), className: 'pf-forecast-link'}, v) : null;
};

/* A folder path that keeps the folder's own name (its last segment) in view: the parent part
   shrinks first and loses its start ("…\Legal\" before "Meeting Notes"); the whole path is the
   cell's tooltip. */
dagcomponentfuncs.PfPath = function (props) {
  var v = pfText(props.value);
  var cut = v.lastIndexOf('\\');
  var parent = cut >= 0 ? v.slice(0, cut + 1) : '';
  var leaf = cut >= 0 ? v.slice(cut + 1) : v;
  return React.createElement('span', {className: 'pf-gpath'},
    parent ? React.createElement('span', {className: 'pf-gpath-parent'},
                                 React.createElement('bdi', {dir: 'ltr'}, parent)) : null,
    React.createElement('span', {className: 'pf-gpath-leaf'}, leaf));
};

/* A CN set that may wrap after each "," and ";" (never inside a range such as PFS1:1-17). */
function pfCnset(text) {
  var s = pfText(text);
  if (!s) { return React.createElement('span', {className: 'pf-cnset pf-empty'}, '∅'); }
  var parts = [], current = '';
  for (var i = 0; i < s.length; i++) {
    current += s[i];
    if (s[i] === ',' || s[i] === ';') { parts.push(current); current = ''; }
  }
  if (current) { parts.push(current); }
  var children = [];
  parts.forEach(function (p, k) {
    if (k) { children.push(React.createElement('wbr', {key: 'w' + k})); }
    children.push(React.createElement('span', {key: 'r' + k, className: 'pf-cn-range'}, p));
  });
  return React.createElement('span', {className: 'pf-cnset'}, children);
}

/* How many CNs an entry still waits for, and which. */
dagcomponentfuncs.PfRemaining = function (props) {
  var d = props.data || {};
  return React.createElement('span', {className: 'pf-remaining'},
    React.createElement('span', {className: 'pf-remaining-count'}, pfText(props.value)),
    d.cnset_remaining ? ': ' : '', d.cnset_remaining ? pfCnset(d.cnset_remaining) : null);
};

/* A UTC time that may wrap between its date and its time, never inside either. */
function pfTime(text) {
  var parts = pfText(text).split(' ');
  var out = [];
  parts.forEach(function (p, k) {
    if (k) { out.push(' '); }
    out.push(React.createElement('span', {key: k, className: 'pf-nowrap'}, p));
  });
  return out;
}

/* The entry's id, then whether it is local or remote and opened for a new replica, and when it
   was opened (UTC). */
dagcomponentfuncs.PfEntry = function (props) {
  var d = props.data || {};
  var e = React.createElement;
  var kind = [pfText(d.locality), d.new_replica === 'yes' ? 'new replica' : '',
              d.opened_at ? 'opened' : ''].filter(Boolean).join(', ');
  return e('span', {className: 'pf-entry'},
    e('span', {className: 'pf-entry-id'}, pfText(props.value)),
    kind ? e('span', {className: 'pf-entry-kind'}, kind, d.opened_at ? ' ' : '',
             d.opened_at ? pfTime(d.opened_at) : null) : null);
};

/* A phone's row: the whole entry as a card, every value in full (nothing cut to "1-2…"). */
dagcomponentfuncs.PfEntryCard = function (props) {
  var d = props.data || {};
  var e = React.createElement;
  function link(base, value, cls) {
    var v = pfText(value);
    return v ? e('a', {href: base + encodeURIComponent(v), className: cls}, v) : null;
  }
  function line(cls, label, value) {
    return value ? e('div', {className: cls}, e('span', {className: 'pf-ec-label'}, label + ' '), value) : null;
  }
  var path = pfText(d.path).split('\\');
  var pathParts = [];
  path.forEach(function (p, k) {
    if (k) { pathParts.push(e('wbr', {key: 'w' + k})); }
    pathParts.push(e('span', {key: 'p' + k, className: 'pf-path-part'}, p + (k < path.length - 1 ? '\\' : '')));
  });
  var kind = [pfText(d.locality), d.new_replica === 'yes' ? 'new replica' : ''].filter(Boolean).join(', ');
  return e('div', {className: 'pf-entry-card'},
    e('div', {className: 'pf-ec-head'},
      link('/folder/', d.fid, 'pf-ec-fid'), ' ', link('/store/', d.observer, 'pf-ec-store'),
      d.overdue === 'yes' ? e('span', {className: 'pf-ec-overdue pf-grid-overdue'}, 'overdue') : null),
    pathParts.length ? e('div', {className: 'pf-ec-path'}, pathParts) : null,
    e('div', {className: 'pf-ec-status'},
      d.health ? dagcomponentfuncs.PfHealth({value: d.health}) : null,
      e('span', null, ' open ' + pfText(d.open_for) + ', ' + pfText(d.requests) + ' request'
        + (Number(d.requests) === 1 ? '' : 's'))),
    line('pf-ec-remaining', pfText(d.cnset_remaining_count) + ' CN' + (Number(d.cnset_remaining_count) === 1 ? '' : 's')
      + ' remaining:', pfCnset(d.cnset_remaining)),
    line('pf-ec-next', 'next request:', pfText(d.next_request)),
    line('pf-ec-due', 'next due:', pfText(d.next_due_at)),
    line('pf-ec-forecast', 'forecast:', d.forecast ? e('a', {href: pfForecastHref(d)}, pfText(d.forecast)) : ''),
    e('div', {className: 'pf-ec-entry'},
      'entry ', e('span', {className: 'pf-ec-entry-id'}, pfText(d.entry_id)),
      kind ? ' (' + kind + ')' : '', d.opened_at ? ', opened ' + pfText(d.opened_at) : ''));
};
