"""The chat platforms kb answers in (docs/channels.md): employees ask where they already talk,
and get the answer in the thread, its sources as the platform's cards.

    base.py       the interface a platform implements (`Platform`: receive, person, members,
                  post, close; prepare, when receive needs something fetched first) and the
                  plain types crossing it (`Callback`, `Inbound`, `Received`, `Reply`,
                  `Source`, `Refused`)
    hub.py        the way of every message: the callback route, once per event id, rate limits,
                  who asks, the thread's history, the gate, the Assistant, the record, the
                  audit, the reply; `PLATFORMS`, the registry
    identity.py   platform users to kb users (user_map, the directory), a group chat's groups
    limits.py     questions per person and per chat a minute
    reply.py      an Answer as a card's content, the notices, in the asker's language
    crypto.py     the AES-256-CBC schemes and signatures of Feishu/Lark and WeCom
    slack.py      Slack: signing secret, Events API, Block Kit
    feishu.py     Feishu/Lark: Encrypt Key and Verification Token, interactive cards
    wecom.py      WeCom: msg_signature and AES-encrypted XML, markdown and template cards
    dingtalk.py   DingTalk: the robot's HMAC-SHA256 sign, session webhooks, ActionCards
    teams.py      Microsoft Teams: Bot Framework's JWT, replies at the serviceUrl, Adaptive Cards

The next platform is one module: a `Platform` subclass (its callback checks, its API calls,
its cards) and one line in `hub.PLATFORMS`, with its `[channels.<name>]` table in
core/settings/channels.py. It imports `core/`, `assistant/` (public functions only), the ui
hall (wiring, i18n labels), api/'s shared parts (`asking.py`, `openai_api.link`) and
identity/ (users, the directory, a client's address); only web/ (the callback routes) and cli/
(`kb channels`) import it.
"""
