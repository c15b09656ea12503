// Progressive enhancement only: every page works without this file. It shows the copy button
// next to a new key and copies the key on click (the field can always be selected by hand).
document.addEventListener('DOMContentLoaded', function () {
  document.querySelectorAll('button[data-copy]').forEach(function (button) {
    var field = document.getElementById(button.getAttribute('data-copy'));
    var status = document.querySelector('[data-copy-status="' + button.getAttribute('data-copy') + '"]');
    if (!field || !navigator.clipboard) return;
    button.hidden = false;
    button.addEventListener('click', function () {
      navigator.clipboard.writeText(field.value).then(
        function () { if (status) status.textContent = 'Copied.'; },
        function () { field.select(); if (status) status.textContent = 'Press Ctrl+C (or ⌘C) to copy.'; }
      );
    });
  });
});
