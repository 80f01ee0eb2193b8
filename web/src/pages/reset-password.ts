import { api } from "../api.js";
import { h, replace, showStatus } from "../dom.js";
import { actionForm } from "../form.js";
import type { Page } from "../router.js";
import { clearSession } from "../session.js";
import { newPasswordFields } from "./password-fields.js";

/** The page of the reset e-mail's link: a new login password, after which every session has ended. */
export const resetPasswordPage: Page = {
  title: "Choose a new password",
  render({ main, query }) {
    const token = query.get("token");
    // The token is single-use and worth the account: keep it out of the address bar and history.
    history.replaceState(null, "", "/reset-password");
    if (!token) {
      replace(
        main,
        h("h1", {}, "Choose a new password"),
        h(
          "p",
          { class: "status", role: "alert", "data-kind": "error" },
          "This link has no token. Open the link from the e-mail exactly as it is, or ask for a new one.",
        ),
        h("p", {}, h("a", { href: "/forgot-password", "data-route": true }, "Ask for a new link")),
      );
      return;
    }
    const password = newPasswordFields("New login password");
    const form = actionForm({
      fields: password.fields,
      submit: "Set new password",
      working: "Setting your new password…",
      async action(status) {
        await api("/v1/auth/reset-password", {
          method: "POST",
          anonymous: true,
          json: { token, password: password.value() },
        });
        // Every session of the account has ended, this tab's included.
        clearSession();
        form.replaceWith(
          h(
            "div",
            {},
            h(
              "p",
              { class: "status", role: "status", "data-kind": "ok" },
              "Your login password is changed, and every session was logged out.",
            ),
            h("p", {}, h("a", { class: "button", href: "/login", "data-route": true }, "Log in")),
          ),
        );
        showStatus(status, "");
      },
    });
    replace(
      main,
      h("h1", {}, "Choose a new password"),
      form,
      h(
        "p",
        {},
        "Link expired or used? ",
        h("a", { href: "/forgot-password", "data-route": true }, "Ask for a new one"),
        ".",
      ),
    );
  },
};
