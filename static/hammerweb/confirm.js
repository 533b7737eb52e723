// A bulk action's confirmation arrives as <dialog data-modal> (templates/hammerweb/bulk_panel.html).
// It opens modal: over the dimmed page, away from the page's own buttons (the selection's Delete
// sits right below the panel it is swapped into), its "No" focused first. Closing it ("No", Esc)
// removes it; "Yes" swaps the panel, the dialog with it, for the operation's progress.
function openModals(root) {
  const dialogs = root.matches?.("dialog[data-modal]") ? [root] : root.querySelectorAll?.("dialog[data-modal]") ?? [];
  for (const dialog of dialogs) {
    if (dialog.open) continue;
    dialog.addEventListener("close", () => dialog.remove());
    dialog.showModal();
  }
}

document.addEventListener("htmx:load", (event) => openModals(event.detail.elt));
document.addEventListener("click", (event) => {
  const button = event.target.closest?.("[data-dialog-close]");
  if (button) button.closest("dialog")?.close();
});
