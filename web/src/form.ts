import { messageOf } from "./api.js";
import { busy, type Child, h, showStatus, statusLine } from "./dom.js";

export interface ActionForm {
  /** The fields, in order; the submit button and the live status line follow them. */
  fields: (Child | Child[])[];
  submit: string;
  /** Said while the action runs. */
  working?: string;
  /** Runs on submit with the form's controls disabled; what it throws is shown in words. */
  action(status: HTMLElement): Promise<void>;
  /** `card` (the default) or `inline`. */
  layout?: "card" | "inline";
  /** Extra elements after the status line (a progress bar, a datalist). */
  after?: Child[];
}

/** Every form of the app: labelled fields, one submit, errors in words in a live region. */
export function actionForm(options: ActionForm): HTMLFormElement {
  const status = statusLine();
  const form = h(
    "form",
    { class: options.layout ?? "card" },
    ...options.fields,
    h("button", { type: "submit" }, options.submit),
    status,
    ...(options.after ?? []),
  );
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    void busy(form, async () => {
      if (options.working) showStatus(status, options.working);
      try {
        await options.action(status);
      } catch (error) {
        showStatus(status, messageOf(error), "error");
      }
    });
  });
  return form;
}

/** A password field; `autocomplete` tells password managers whether it is new or current. */
export function passwordInput(
  name: string,
  autocomplete: "new-password" | "current-password",
  minLength?: number,
): HTMLInputElement {
  return h("input", {
    type: "password",
    name,
    autocomplete,
    required: true,
    minlength: minLength,
    maxlength: 200,
  });
}

/** An e-mail address field, filled in from a link that names the address (`?email=`) when there is one. */
export function emailInput(prefilled: string | null): HTMLInputElement {
  return h("input", {
    type: "email",
    name: "email",
    autocomplete: "email",
    required: true,
    value: prefilled ?? undefined,
  });
}
