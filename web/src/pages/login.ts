import { api, messageOf } from "../api.js";
import { busy, field, h, replace, showStatus, statusLine } from "../dom.js";
import { navigate, type Page } from "../router.js";
import { type Session, saveSession } from "../session.js";

/** Only paths of this app: a `next` pointing elsewhere would make the login page an open redirect. */
function safeNext(next: string | null): string {
  return next && /^\/([a-z]*|t\/[\w-]+)$/.test(next) ? next : "/inbox";
}

export const loginPage: Page = {
  title: "Log in",
  render({ main, query }) {
    const email = h("input", { type: "email", name: "email", autocomplete: "username", required: true });
    const password = h("input", {
      type: "password",
      name: "password",
      autocomplete: "current-password",
      required: true,
    });
    const status = statusLine();
    const form = h(
      "form",
      { class: "card" },
      field("E-mail address", email),
      field("Password", password),
      h("button", { type: "submit" }, "Log in"),
      status,
    );
    if (query.get("expired")) showStatus(status, "Your session has ended. Log in again.", "info");
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      void busy(form, async () => {
        showStatus(status, "Logging in…");
        try {
          const session = await api<Session>("/v1/auth/login", {
            method: "POST",
            anonymous: true,
            json: { email: email.value.trim(), password: password.value },
          });
          saveSession(session);
          navigate(safeNext(query.get("next")));
        } catch (error) {
          showStatus(status, messageOf(error), "error");
        }
      });
    });
    replace(
      main,
      h("h1", {}, "Log in"),
      form,
      h("p", {}, "No account yet? ", h("a", { href: "/signup", "data-route": true }, "Sign up"), "."),
    );
  },
};
