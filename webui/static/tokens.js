// The API tokens page (system/tokens.html): a Revoke asks first (the form's data-confirm), the form that makes
// a token goes out once however often its button is pressed, and the secret of a token just made is copied
// with one click. Without scripts the forms still work, unasked, and the secret is selected and copied by hand.
"use strict";
document.addEventListener("submit", (event) => {
  const form = event.target;
  if (!(form instanceof HTMLFormElement)) return;
  if (form.dataset.confirm && !window.confirm(form.dataset.confirm)) {
    event.preventDefault();
  } else if (form.dataset.once !== undefined) {
    // Sent again later, the form's one-time mark makes no second token, but a second press while the first
    // is on its way would: the first answer has not yet recorded the mark in the session cookie.
    if (form.dataset.sent) event.preventDefault();
    form.dataset.sent = "yes";
  }
});
// The page kept by the browser's back-forward cache comes back with its form marked as sent.
window.addEventListener("pageshow", () => {
  for (const form of document.querySelectorAll("form[data-once]")) delete form.dataset.sent;
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
