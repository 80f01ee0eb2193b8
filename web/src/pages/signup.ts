import { api, messageOf } from "../api.js";
import { busy, field, h, replace, showStatus, statusLine } from "../dom.js";
import type { Page } from "../router.js";

export const MIN_PASSWORD = 10;

export const signupPage: Page = {
  title: "Sign up",
  render({ main }) {
    const email = h("input", { type: "email", name: "email", autocomplete: "email", required: true });
    const name = h("input", { type: "text", name: "name", autocomplete: "name", maxlength: 200 });
    const password = h("input", {
      type: "password",
      name: "password",
      autocomplete: "new-password",
      required: true,
      minlength: MIN_PASSWORD,
      maxlength: 200,
    });
    const status = statusLine();
    const form = h(
      "form",
      { class: "card", novalidate: false },
      field("E-mail address", email, "Use the address agents send files to."),
      field("Your name (optional)", name),
      field("Password", password, `At least ${MIN_PASSWORD} characters. You log in with it.`),
      h("button", { type: "submit" }, "Create account"),
      status,
    );
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      void busy(form, async () => {
        showStatus(status, "Creating your account…");
        try {
          await api("/v1/auth/signup", {
            method: "POST",
            anonymous: true,
            json: {
              email: email.value.trim(),
              password: password.value,
              ...(name.value.trim() ? { name: name.value.trim() } : {}),
            },
          });
          replace(
            main,
            h("h1", {}, "Check your e-mail"),
            h(
              "p",
              { class: "lead", role: "status" },
              `We sent a link to ${email.value.trim()}. Open it to confirm your address, then log in.`,
            ),
            h("p", {}, h("a", { href: "/login", "data-route": true }, "Go to the login page")),
          );
        } catch (error) {
          showStatus(status, messageOf(error), "error");
        }
      });
    });
    replace(
      main,
      h("h1", {}, "Create your account"),
      form,
      h("p", {}, "Already have one? ", h("a", { href: "/login", "data-route": true }, "Log in"), "."),
    );
  },
};
