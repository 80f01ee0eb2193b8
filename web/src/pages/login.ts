import type { Session } from "@handoff/sdk/types";
import { api } from "../api.js";
import { field, h, replace, showStatus } from "../dom.js";
import { actionForm, passwordInput } from "../form.js";
import { navigate, type Page } from "../router.js";
import { saveSession } from "../session.js";

/** Only paths of this app: a `next` pointing elsewhere would make the login page an open redirect. */
function safeNext(next: string | null): string {
  return next && /^\/([a-z]*|t\/[\w-]+)$/.test(next) ? next : "/inbox";
}

export const loginPage: Page = {
  title: "Log in",
  render({ main, query }) {
    const email = h("input", { type: "email", name: "email", autocomplete: "username", required: true });
    const password = passwordInput("password", "current-password");
    const form = actionForm({
      fields: [field("E-mail address", email), field("Password", password)],
      submit: "Log in",
      working: "Logging in…",
      async action() {
        const session = await api<Session>("/v1/auth/login", {
          method: "POST",
          anonymous: true,
          json: { email: email.value.trim(), password: password.value },
        });
        saveSession(session);
        navigate(safeNext(query.get("next")));
      },
    });
    const status = form.querySelector(".status") as HTMLElement;
    if (query.get("expired")) showStatus(status, "Your session has ended. Log in again.");
    replace(
      main,
      h("h1", {}, "Log in"),
      form,
      h(
        "ul",
        { class: "links" },
        h("li", {}, h("a", { href: "/forgot-password", "data-route": true }, "Forgot your password?")),
        h(
          "li",
          {},
          h(
            "a",
            { href: "/resend-verification", "data-route": true },
            "No confirmation e-mail? Send a new link",
          ),
        ),
        h("li", {}, "No account yet? ", h("a", { href: "/signup", "data-route": true }, "Sign up"), "."),
      ),
    );
  },
};
