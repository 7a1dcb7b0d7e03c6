// The API tokens page (system/tokens.html): a Revoke asks first (the form's data-confirm), and the secret of a
// token just made is copied with one click. Without scripts the forms still work, unasked, and the secret is
// selected and copied by hand.
"use strict";
document.addEventListener("submit", (event) => {
  const form = event.target;
  if (form instanceof HTMLFormElement && form.dataset.confirm && !window.confirm(form.dataset.confirm)) {
    event.preventDefault();
  }
});
document.addEventListener("DOMContentLoaded", () => {
  for (const button of document.querySelectorAll("button[data-copy]")) {
    const field = document.getElementById(button.dataset.copy);
    if (!field) continue;
    button.hidden = false;
    field.addEventListener("focus", () => field.select());
    button.addEventListener("click", async () => {
      field.select();
      try {
        await navigator.clipboard.writeText(field.value);
      } catch {
        document.execCommand("copy"); // a page not served over HTTPS has no clipboard API
      }
      button.textContent = button.dataset.copied;
    });
  }
});
