import { h } from "./dom.js";

export interface Confirmation {
  title: string;
  /** What will happen, and that it cannot be undone. */
  message: string;
  /** The words of the button that does it ("Delete", "Revoke"). */
  confirm: string;
}

/**
 * Asks before an action that cannot be undone, in a modal <dialog> (focus is kept inside it and
 * Escape cancels): resolves true only when the person chose the action's own button.
 */
export function confirmAction({ title, message, confirm }: Confirmation): Promise<boolean> {
  const dialog = h(
    "dialog",
    { class: "confirm", "aria-labelledby": "confirm-title", "aria-describedby": "confirm-message" },
    h(
      "form",
      { method: "dialog" },
      h("h2", { id: "confirm-title" }, title),
      h("p", { id: "confirm-message" }, message),
      h(
        "div",
        { class: "actions" },
        h("button", { type: "submit", value: "cancel", class: "secondary", autofocus: true }, "Cancel"),
        h("button", { type: "submit", value: "confirm", class: "danger" }, confirm),
      ),
    ),
  );
  document.body.append(dialog);
  return new Promise((resolve) => {
    dialog.addEventListener("close", () => {
      resolve(dialog.returnValue === "confirm");
      dialog.remove();
    });
    dialog.showModal();
  });
}

/** Runs `action` once the person confirmed it; nothing (and no error) when they cancelled. */
export async function confirmThen(ask: Confirmation, action: () => Promise<unknown>): Promise<void> {
  if (await confirmAction(ask)) await action();
}
