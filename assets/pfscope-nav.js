/* pfscope: after a page is drawn by Dash, scroll to the address's #anchor (a glossary term, a
   section), since the element did not exist when the browser first looked for it. */
(function () {
  var done = null;
  function scrollToHash() {
    var id = decodeURIComponent((window.location.hash || '').slice(1));
    if (!id || done === window.location.href) { return; }
    var el = document.getElementById(id);
    if (el) {
      done = window.location.href;
      el.scrollIntoView({block: 'start'});
      el.classList.add('pf-targeted');
    }
  }
  new MutationObserver(scrollToHash).observe(document.documentElement, {childList: true, subtree: true});
  window.addEventListener('hashchange', function () { done = null; scrollToHash(); });
})();
