// The API page (webui/templates/apidocs.html, webui/api/docs.py): Swagger UI renders the description named
// by #api-docs's data-description, with this web UI's own copy of Swagger UI and nothing from elsewhere.
// "Try it out" calls are the logged-in user's: the session cookie goes with them (same origin), and a
// change (POST, PATCH, PUT, DELETE) carries the page's CSRF token, as the pages' own forms do.
"use strict";
(function () {
  const target = document.getElementById("api-docs");
  if (!target || typeof SwaggerUIBundle !== "function") return;
  const csrf = document.querySelector('meta[name="csrf-token"]');
  window.apiDocs = SwaggerUIBundle({
    url: target.dataset.description,
    domNode: target,
    layout: "BaseLayout",
    presets: [SwaggerUIBundle.presets.apis],
    deepLinking: true,
    // Swagger UI would otherwise send the description to its public online validator for a badge.
    validatorUrl: null,
    requestInterceptor: function (request) {
      if (csrf && new URL(request.url, window.location.href).origin === window.location.origin) {
        request.headers["X-CSRF-Token"] = csrf.content;
      }
      return request;
    },
  });
})();
