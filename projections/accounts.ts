import { type AccountEvent, type AccountKind, accountKindOf } from "../domain/account.js";
import { ERASED } from "../domain/personal-data.js";
import { categoryProjection } from "./projection.js";
import type { Changed, Inserted } from "./rows.js";

/** A row of `accounts`, as src/queries/accounts.ts reads it (projections/rows.ts). */
export interface AccountRow {
  id: string;
  /** Sealed under the person's data key (decisions 6.5), or in clear before sealing; "[erased]" once erased. */
  email: string;
  name: string;
  person_id: string | null;
  plan: string;
  kind: AccountKind;
  created_at: Date;
  erased_at: Date | null;
}

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
        } satisfies Inserted<AccountRow>);
        return;
      }
      case "AccountErased":
        // Sealed values would read as erased anyway; written out, so that values stored in clear
        // before sealing existed go too, and a rebuilt row says so in plain words.
        await trx("accounts")
          .where({ id })
          .update({ email: ERASED, name: ERASED, erased_at: event.data.at } satisfies Changed<AccountRow>);
        return;
      case "AccountPlanChanged":
        await trx("accounts")
          .where({ id })
          .update({ plan: event.data.plan } satisfies Changed<AccountRow>);
        return;
      default:
        return;
    }
  },
});
