import { messageOf } from "../api.js";
import { busy, field, h, showStatus, statusLine } from "../dom.js";
import {
  keepUnlocked,
  MIN_RECEIVING_PASSWORD,
  type ReceivingKey,
  setReceivingPassword,
  unlock,
} from "../receiving-key.js";

const DERIVING = "Deriving your key in this browser (argon2id, 64 MiB); this takes a moment…";

/** Sets (or, from the settings page, changes) the receiving password: a new key pair, a new key version. */
export function receivingPasswordForm(change: boolean, onSet: (key: ReceivingKey) => void): HTMLFormElement {
  const password = h("input", {
    type: "password",
    name: "receiving-password",
    autocomplete: "new-password",
    required: true,
    minlength: MIN_RECEIVING_PASSWORD,
  });
  const repeat = h("input", {
    type: "password",
    name: "receiving-password-repeat",
    autocomplete: "new-password",
    required: true,
  });
  const status = statusLine();
  const form = h(
    "form",
    { class: "card" },
    field(
      change ? "New receiving password" : "Receiving password",
      password,
      `At least ${MIN_RECEIVING_PASSWORD} characters, different from your login password. It never leaves this browser and cannot be reset: without it, files sent to you cannot be opened.`,
    ),
    field("Repeat it", repeat),
    h("button", { type: "submit" }, change ? "Change receiving password" : "Set receiving password"),
    status,
  );
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    if (password.value.length < MIN_RECEIVING_PASSWORD) {
      showStatus(
        status,
        `The receiving password needs at least ${MIN_RECEIVING_PASSWORD} characters.`,
        "error",
      );
      return;
    }
    if (password.value !== repeat.value) {
      showStatus(status, "The two passwords differ.", "error");
      return;
    }
    void busy(form, async () => {
      showStatus(status, DERIVING);
      try {
        const { key, pair } = await setReceivingPassword(password.value);
        keepUnlocked(pair, key.key_version);
        password.value = "";
        repeat.value = "";
        showStatus(status, `Receiving key set (version ${key.key_version}).`, "ok");
        onSet(key);
      } catch (error) {
        showStatus(status, messageOf(error), "error");
      }
    });
  });
  return form;
}

/** Re-derives the private key for this tab from the receiving password. */
export function unlockForm(key: ReceivingKey, onUnlocked: () => void): HTMLFormElement {
  const password = h("input", {
    type: "password",
    name: "receiving-password",
    autocomplete: "current-password",
    required: true,
  });
  const status = statusLine();
  const form = h(
    "form",
    { class: "card" },
    field(
      "Receiving password",
      password,
      "Unlocks your files in this tab only; reloading the page locks them again.",
    ),
    h("button", { type: "submit" }, "Unlock"),
    status,
  );
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    void busy(form, async () => {
      showStatus(status, DERIVING);
      try {
        keepUnlocked(await unlock(password.value, key), key.key_version);
        password.value = "";
        onUnlocked();
      } catch (error) {
        showStatus(status, messageOf(error), "error");
      }
    });
  });
  return form;
}
