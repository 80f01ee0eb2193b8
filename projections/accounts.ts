import { type AccountEvent, accountKindOf } from "../domain/account.js";
import { ERASED } from "../domain/personal-data.js";
import { categoryProjection } from "./projection.js";

export const accountsProjection = categoryProjection<AccountEvent>({
  name: "accounts",
  tables: ["accounts"],
  category: "account",
  async apply(trx, event, id) {
    switch (event.type) {
      case "AccountCreated": {
        const { email, name, personId, plan, createdAt } = event.data;
        await trx("accounts").insert({
          id,
          email,
          name,
          person_id: personId,
          plan,
          kind: accountKindOf(event.data),
          created_at: createdAt,
        });
        return;
      }
      case "AccountErased":
        // Sealed values would read as erased anyway; written out, so that values stored in clear
        // before sealing existed go too, and a rebuilt row says so in plain words.
        await trx("accounts").where({ id }).update({ email: ERASED, name: ERASED, erased_at: event.data.at });
        return;
      case "AccountPlanChanged":
        await trx("accounts").where({ id }).update({ plan: event.data.plan });
        return;
      default:
        return;
    }
  },
});
