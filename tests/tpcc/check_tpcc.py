#!/usr/bin/env python3
"""Checks `aup run examples/tpcc/tpcc.aup` answers against a model.

Usage: check_tpcc.py REQUESTS RESPONSES SUMMARY NOW

REQUESTS are the lines sent (load events, transactions, consistency
queries), RESPONSES the lines aup answered, SUMMARY the generator's
`run --summary` line, NOW the --fixed-time aup ran with.

The model is an independent transcription of the TPC-C transaction
profiles (clause 2) and consistency conditions (clause 3.3.2) with the
module's representation (integer cents, rates in ten-thousandths). Every response must be ok and
equal to the model's result, except New-Orders with an unused item, which
must fail with code `failed` and message `item number is not valid`.
The number of those must equal the generator's count. Exit status 0 when
everything matches, 1 otherwise (each problem is printed with its request
and response).
"""
import json
import math
import sys
from collections import deque

ROLLBACK_MESSAGE = "item number is not valid"
MAX_REPORTS = 20  # enough to see a pattern; the count says the rest


def c_round(x):
    """C's round(): halves away from zero (aup's round is std::round)."""
    f = math.floor(abs(x))
    r = f + 1 if abs(x) - f >= 0.5 else f
    return r if x >= 0 else -r


class Rollback(Exception):
    pass


class Model:
    def __init__(self, now):
        self.now = now
        self.items = {}
        self.warehouses = {}
        self.districts = {}  # (w, d)
        self.customers = {}  # (w, d, c)
        self.names = {}  # (w, d, last) -> [(first, c), ...]
        self.orders = {}  # (w, d, o)
        self.latest = {}  # (w, d, c) -> the customer's greatest order number
        self.waiting = {}  # (w, d) -> deque of order numbers, ascending
        self.lines = {}  # (w, d, o) -> [line dict, ...] by number
        self.stock = {}  # (w, item)
        self.next_history = 1

    # ---- load events: the rows as given ----------------------------------

    def load_row(self, event, r):
        if event == "load_items":
            self.items[r["id"]] = r
        elif event == "load_warehouses":
            self.warehouses[r["id"]] = dict(r)
        elif event == "load_districts":
            self.districts[(r["w"], r["d"])] = dict(r)
        elif event == "load_customers":
            self.customers[(r["w"], r["d"], r["c"])] = dict(r)
            self.names.setdefault((r["w"], r["d"], r["last"]), []).append((r["first"], r["c"]))
        elif event == "load_history":
            self.next_history = max(self.next_history, r["id"] + 1)
        elif event == "load_orders":
            self.orders[(r["w"], r["d"], r["o"])] = dict(r)
            k = (r["w"], r["d"], r["customer"])
            self.latest[k] = max(self.latest.get(k, 0), r["o"])
        elif event == "load_new_orders":
            assert (r["w"], r["d"], r["o"]) in self.orders
            q = self.waiting.setdefault((r["w"], r["d"]), deque())
            assert not q or q[-1] < r["o"], "new orders are loaded in ascending order"
            q.append(r["o"])
        elif event == "load_order_lines":
            self.lines.setdefault((r["w"], r["d"], r["o"]), []).append(dict(r))
        elif event == "load_stock":
            self.stock[(r["w"], r["item"])] = dict(r)
        else:
            raise ValueError(event)

    def load(self, event, rows):
        for r in rows:
            self.load_row(event, r)
        return {"rows": len(rows)}

    def customer(self, w, d, c, last):
        """By number, or (c 0) by last name: sorted by first name, the one
        at position ceil(n / 2), counting from 1 (clause 2.5.2.2)."""
        if c == 0:
            named = sorted(self.names[(w, d, last)])
            c = named[(len(named) + 1) // 2 - 1][1]
        return self.customers[(w, d, c)]

    # ---- the transactions -------------------------------------------------

    def new_order(self, a):
        lines = a["lines"]
        # The module fails on the first unknown item and undoes everything;
        # so the order's only effect is none at all.
        if any(l["item"] not in self.items for l in lines):
            raise Rollback()
        w, d, c = a["w"], a["d"], a["c"]
        warehouse = self.warehouses[w]
        district = self.districts[(w, d)]
        customer = self.customers[(w, d, c)]
        o = district["next_order"]
        district["next_order"] = o + 1
        all_local = int(all(l["supply"] == w for l in lines))
        self.orders[(w, d, o)] = {"w": w, "d": d, "o": o, "customer": c, "entry": self.now,
                                  "carrier": 0, "lines": len(lines), "all_local": all_local}
        self.waiting.setdefault((w, d), deque()).append(o)
        self.latest[(w, d, c)] = o
        total = 0
        brands = ""
        rows = []
        for n, l in enumerate(lines, 1):
            item = self.items[l["item"]]
            price = item["price"]
            s = self.stock[(l["supply"], l["item"])]
            # "B" when both data hold ORIGINAL (clause 2.4.2.2).
            brands += "B" if "ORIGINAL" in item["data"] and "ORIGINAL" in s["data"] else "G"
            q = l["quantity"]
            s["quantity"] = s["quantity"] - q if s["quantity"] >= q + 10 else s["quantity"] - q + 91
            s["ytd"] += q
            s["order_cnt"] += 1
            if l["supply"] != w:
                s["remote_cnt"] += 1
            amount = q * price
            rows.append({"w": w, "d": d, "o": o, "number": n, "item": l["item"],
                         "supply": l["supply"], "delivery": 0, "quantity": q, "amount": amount,
                         "dist_info": s["dist_%02d" % d]})
            total += amount
        self.lines[(w, d, o)] = rows
        rates = (10_000 - customer["discount"]) * (10_000 + warehouse["tax"] + district["tax"])
        # aup computes in binary64: total * rates is exact (< 2^53), and
        # Python's int / int is the correctly rounded quotient, as is IEEE's.
        return {"order": o, "lines": len(lines), "total": c_round(float(total * rates) / 100_000_000),
                "brands": brands}

    def payment(self, a):
        amount = a["amount"]
        self.warehouses[a["w"]]["ytd"] += amount
        self.districts[(a["w"], a["d"])]["ytd"] += amount
        c = self.customer(a["c_w"], a["c_d"], a["c"], a["last"])
        c["balance"] -= amount
        c["ytd_payment"] += amount
        c["payment_cnt"] += 1
        self.next_history += 1
        return {"c": c["c"], "balance": c["balance"], "credit": c["credit"]}

    def order_status(self, a):
        w, d = a["w"], a["d"]
        c = self.customer(w, d, a["c"], a["last"])
        o = self.orders[(w, d, self.latest[(w, d, c["c"])])]
        return {"c": c["c"], "balance": c["balance"], "order": o["o"], "entry": o["entry"],
                "carrier": o["carrier"], "lines": self.lines.get((w, d, o["o"]), [])}

    def deliver_district(self, w, d, carrier):
        q = self.waiting.get((w, d))
        if not q:
            return 0
        number = q.popleft()
        o = self.orders[(w, d, number)]
        o["carrier"] = carrier
        total = 0
        for l in self.lines.get((w, d, number), []):
            l["delivery"] = self.now
            total += l["amount"]
        c = self.customers[(w, d, o["customer"])]
        c["balance"] += total
        c["delivery_cnt"] += 1
        return number

    def delivery(self, a):
        return {"orders": [self.deliver_district(a["w"], d, a["carrier"]) for d in range(1, 11)]}

    def stock_level(self, a):
        w, d = a["w"], a["d"]
        nxt = self.districts[(w, d)]["next_order"]
        items = set()
        for o in range(nxt - 20, nxt):
            for l in self.lines.get((w, d, o), []):
                items.add(l["item"])
        low = sum(1 for i in items if self.stock[(w, i)]["quantity"] < a["threshold"])
        return {"low_stock": low}


def main():
    requests_path, responses_path, summary_path, now = sys.argv[1:5]
    model = Model(float(now))
    with open(summary_path) as f:
        summary = json.loads(f.readline())
    problems = 0
    rollbacks = 0
    consistency_checks = 0
    kinds = {}

    def report(what, request, response):
        nonlocal problems
        problems += 1
        if problems <= MAX_REPORTS:
            print(f"PROBLEM: {what}\n  request:  {request[:600]}\n  response: {response[:600]}")

    with open(requests_path) as rq, open(responses_path) as rs:
        for number, request in enumerate(rq, 1):
            request = request.rstrip("\n")
            response = rs.readline().rstrip("\n")
            if not response:
                report(f"request {number} has no response", request, "")
                break
            req = json.loads(request)  # our own generator's output
            name = req.get("event") or req.get("query")
            kinds[name] = kinds.get(name, 0) + 1
            try:
                resp = json.loads(response)
            except ValueError as e:
                report(f"response {number} is not JSON ({e})", request, response)
                continue
            if resp.get("id") != req.get("id"):
                report(f"response {number} answers id {resp.get('id')}", request, response)
                continue
            args = req["args"]
            try:
                if name.startswith("load_"):
                    want = model.load(name, args["rows"])
                elif name == "consistency":
                    consistency_checks += 1
                    want = {"ok": True, "problems": []}
                else:
                    want = getattr(model, name)(args)
            except Rollback:
                error = resp.get("error", {})
                message = error.get("message", "")
                if resp.get("ok") is False and error.get("code") == "failed" and (
                        message == ROLLBACK_MESSAGE or message.startswith(ROLLBACK_MESSAGE + " (")):
                    rollbacks += 1
                else:
                    report("a New-Order with an unused item must fail with `item number is not valid`",
                           request, response)
                continue
            if resp.get("ok") is not True:
                report("not ok", request, response)
            elif resp.get("result") != want:
                report(f"result differs from the model's {json.dumps(want)[:600]}", request, response)
        if rs.readline():
            report("more responses than requests", "", "")

    if rollbacks != summary["rollbacks"]:
        report(f"{rollbacks} rollbacks answered, the generator put in {summary['rollbacks']}", "", "")
    transactions = sum(kinds.get(k, 0) for k in
                       ("new_order", "payment", "order_status", "delivery", "stock_level"))
    if transactions != summary["transactions"]:
        report(f"{transactions} transactions sent, the generator made {summary['transactions']}", "", "")
    print(f"requests by name: {json.dumps(kinds, sort_keys=True)}")
    print(f"rollbacks: {rollbacks} (generator: {summary['rollbacks']}), consistency checks: {consistency_checks}")
    print(f"{problems} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
