// The dashboard's WebSocket (htmx ws extension, ws-connect on the overview). While it is open
// the server pushes the live regions, so their 2 s polls stand down: the poll's trigger filter
// ({% live %} in queues/templatetags/dashboard.py) checks this attribute on <body>. When the
// socket closes the polls resume until the extension reconnects.
document.addEventListener("htmx:wsOpen", () => document.body.setAttribute("data-ws-live", ""));
for (const name of ["htmx:wsClose", "htmx:wsError"]) {
  document.addEventListener(name, () => document.body.removeAttribute("data-ws-live"));
}
