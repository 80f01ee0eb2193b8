import type { ReceivingKey } from "@handoff/sdk/types";
import { field, showStatus } from "../dom.js";
import { actionForm, passwordInput } from "../form.js";
import { keepUnlocked, MIN_RECEIVING_PASSWORD, setReceivingPassword, unlock } from "../receiving-key.js";

const DERIVING = "Deriving your key in this browser (argon2id, 64 MiB); this takes a moment…";

/** Sets (or, from the settings page, changes) the receiving password: a new key pair, a new key version. */
export function receivingPasswordForm(change: boolean, onSet: (key: ReceivingKey) => void): HTMLFormElement {
  const password = passwordInput("receiving-password", "new-password", MIN_RECEIVING_PASSWORD);
  const repeat = passwordInput("receiving-password-repeat", "new-password");
  return actionForm({
    fields: [
      field(
        change ? "New receiving password" : "Receiving password",
        password,
        `At least ${MIN_RECEIVING_PASSWORD} characters, different from your login password. It never leaves this browser and cannot be reset: without it, files sent to you cannot be opened.`,
      ),
      field("Repeat it", repeat),
    ],
    submit: change ? "Change receiving password" : "Set receiving password",
    async action(status) {
      if (password.value !== repeat.value) throw new Error("The two passwords differ.");
      showStatus(status, DERIVING);
      const { key, pair } = await setReceivingPassword(password.value);
      keepUnlocked(pair, key.key_version);
      password.value = "";
      repeat.value = "";
      showStatus(status, `Receiving key set (version ${key.key_version}).`, "ok");
      onSet(key);
    },
  });
}

/** Re-derives the private key for this tab from the receiving password. */
export function unlockForm(key: ReceivingKey, onUnlocked: () => void): HTMLFormElement {
  const password = passwordInput("receiving-password", "current-password");
  return actionForm({
    fields: [
      field(
        "Receiving password",
        password,
        "Unlocks your files in this tab only; reloading the page locks them again.",
      ),
    ],
    submit: "Unlock",
    working: DERIVING,
    async action() {
      keepUnlocked(await unlock(password.value, key), key.key_version);
      password.value = "";
      onUnlocked();
    },
  });
}
