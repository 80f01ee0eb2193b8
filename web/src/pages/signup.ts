import { api } from "../api.js";
import { field, h, replace } from "../dom.js";
import { actionForm, emailInput, passwordInput } from "../form.js";
import type { Page } from "../router.js";
import { MIN_LOGIN_PASSWORD as MIN_PASSWORD } from "./password-fields.js";

export const signupPage: Page = {
  title: "Sign up",
  render({ main, query }) {
    // The invite e-mail's link names the address the files were sent to.
    const email = emailInput(query.get("email"));
    const name = h("input", { type: "text", name: "name", autocomplete: "name", maxlength: 200 });
    const password = passwordInput("password", "new-password", MIN_PASSWORD);
    const form = actionForm({
      fields: [
        field("E-mail address", email, "Use the address agents send files to."),
        field("Your name (optional)", name),
        field("Password", password, `At least ${MIN_PASSWORD} characters. You log in with it.`),
      ],
      submit: "Create account",
      working: "Creating your account…",
      async action() {
        const address = email.value.trim();
        await api("/v1/auth/signup", {
          method: "POST",
          anonymous: true,
          json: {
            email: address,
            password: password.value,
            ...(name.value.trim() ? { name: name.value.trim() } : {}),
          },
        });
        const { delivery } = await api<{ delivery: "smtp" | "outbox" }>("/v1/mail-delivery", {
          anonymous: true,
        });
        replace(
          main,
          h("h1", {}, "Check your e-mail"),
          h(
            "p",
            { class: "lead", role: "status" },
            `We sent a link to ${address}. Open it to confirm your address, then log in.`,
          ),
          ...(delivery === "outbox"
            ? [
                h(
                  "p",
                  { class: "notice" },
                  "This server sends no e-mail (no SMTP server is configured): the message waits in its outbox folder, DATA_DIR/outbox. Whoever runs the server sees the link with ",
                  h("code", {}, "handoff outbox"),
                  ".",
                ),
              ]
            : []),
          h("p", {}, h("a", { href: "/login", "data-route": true }, "Go to the login page")),
          h(
            "p",
            { class: "hint" },
            "No e-mail after a few minutes? ",
            h(
              "a",
              { href: `/resend-verification?email=${encodeURIComponent(address)}`, "data-route": true },
              "Send a new link",
            ),
            ".",
          ),
        );
      },
    });
    replace(
      main,
      h("h1", {}, "Create your account"),
      form,
      h("p", {}, "Already have one? ", h("a", { href: "/login", "data-route": true }, "Log in"), "."),
    );
  },
};
