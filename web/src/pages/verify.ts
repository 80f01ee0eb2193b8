import type { Account } from "@handoff/sdk/types";
import { api, messageOf } from "../api.js";
import { h, replace, showStatus, statusLine } from "../dom.js";
import type { Page } from "../router.js";

export const verifyPage: Page = {
  title: "Confirm your e-mail",
  async render({ main, query }) {
    const token = query.get("token");
    // The token is single-use: keep it out of the address bar, history and bookmarks.
    history.replaceState(null, "", "/verify");
    const status = statusLine();
    replace(main, h("h1", {}, "Confirm your e-mail address"), status);
    if (!token) {
      showStatus(
        status,
        "This link has no token. Open the link from the e-mail we sent you exactly as it is.",
        "error",
      );
      return;
    }
    showStatus(status, "Confirming your address…");
    try {
      const { account } = await api<{ account: Account }>("/v1/auth/verify", {
        method: "POST",
        anonymous: true,
        json: { token },
      });
      showStatus(status, `Your address ${account.email} is confirmed.`, "ok");
      main.append(h("p", {}, h("a", { class: "button", href: "/login", "data-route": true }, "Log in")));
    } catch (error) {
      showStatus(status, messageOf(error), "error");
      main.append(
        h(
          "p",
          {},
          "Links work once and for 24 hours, and only the newest one. ",
          h("a", { href: "/resend-verification", "data-route": true }, "Send a new link"),
          " if yours has expired.",
        ),
      );
    }
  },
};
