import { api } from "../api.js";
import { field, h, replace, showStatus } from "../dom.js";
import { actionForm, emailInput } from "../form.js";
import type { Page } from "../router.js";

interface MailRequestPage {
  title: string;
  intro: string;
  endpoint: string;
  submit: string;
}

/**
 * A page that asks the service to mail a link to an address. The service answers alike whether
 * or not the address has an account, so the page says what happens when it has one.
 */
function mailRequestPage({ title, intro, endpoint, submit }: MailRequestPage): Page {
  return {
    title,
    render({ main, query }) {
      const email = emailInput(query.get("email"));
      const form = actionForm({
        fields: [field("E-mail address", email)],
        submit,
        working: "Sending…",
        async action(status) {
          const address = email.value.trim();
          await api(endpoint, { method: "POST", anonymous: true, json: { email: address } });
          showStatus(
            status,
            `If ${address} has an account that needs it, an e-mail with a link is on its way. Check your inbox (and spam folder).`,
            "ok",
          );
        },
      });
      replace(
        main,
        h("h1", {}, title),
        h("p", { class: "lead" }, intro),
        form,
        h("p", {}, h("a", { href: "/login", "data-route": true }, "Back to the login page")),
      );
    },
  };
}

export const forgotPasswordPage = mailRequestPage({
  title: "Forgot your password?",
  intro:
    "Enter the address you signed up with: we send a link to choose a new login password. It works once, for one hour. Your receiving password is not affected.",
  endpoint: "/v1/auth/forgot-password",
  submit: "Send reset link",
});

export const resendVerificationPage = mailRequestPage({
  title: "Confirm your e-mail address",
  intro:
    "Lost the confirmation e-mail, or its link expired? Enter your address: we send a new link (24 hours), and earlier links stop working.",
  endpoint: "/v1/auth/resend-verification",
  submit: "Send a new link",
});
