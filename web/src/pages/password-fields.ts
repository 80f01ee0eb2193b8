import { type Child, field } from "../dom.js";
import { passwordInput } from "../form.js";

/** Decisions 4.1: a login password has 10 to 200 characters. */
export const MIN_LOGIN_PASSWORD = 10;

/** A new login password typed twice; `value` throws, in words, when the two differ. */
export function newPasswordFields(label: string): { fields: Child[]; value(): string } {
  const password = passwordInput("new-password", "new-password", MIN_LOGIN_PASSWORD);
  const repeat = passwordInput("new-password-repeat", "new-password");
  return {
    fields: [
      field(label, password, `At least ${MIN_LOGIN_PASSWORD} characters. You log in with it.`),
      field("Repeat the new password", repeat),
    ],
    value() {
      if (password.value !== repeat.value) throw new Error("The two passwords differ.");
      return password.value;
    },
  };
}
