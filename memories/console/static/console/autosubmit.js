// A <select data-autosubmit> submits its form when changed (the language and product switchers). A file, not an
// onchange="" attribute: the admin's Content-Security-Policy runs same-origin scripts only (memoryhub/security.py).
document.addEventListener("change", (event) => {
  if (event.target.matches("select[data-autosubmit]")) {
    event.target.form.submit();
  }
});
