"""The settings of the chat platforms kb answers in (`[channels]`, with one table per platform:
`[channels.slack]`, `[channels.feishu]`, `[channels.wecom]`, `[channels.dingtalk]`,
`[channels.teams]`); core/config.py reads them with the other sections (docs/channels.md).
Each platform is off until `enabled = true`; its secrets come from the environment only
(`SECRETS`), never from a config file.

    [channels.slack]
    enabled = true
    [channels.slack.user_map]
    "alice@corp.example" = "alice"

A `KB_` variable sets a platform's key too: `KB_CHANNELS_SLACK_ENABLED=true`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from core.settings.fields import doc

# The environment variables that hold each platform's secrets (docs/channels.md says where each
# comes from in the platform's console).
SECRETS: dict[str, tuple[str, ...]] = {
    "slack": ("KB_SLACK_SIGNING_SECRET", "KB_SLACK_BOT_TOKEN"),
    "feishu": ("KB_FEISHU_APP_SECRET", "KB_FEISHU_VERIFICATION_TOKEN", "KB_FEISHU_ENCRYPT_KEY"),
    "wecom": ("KB_WECOM_SECRET", "KB_WECOM_TOKEN", "KB_WECOM_AES_KEY"),
    "dingtalk": ("KB_DINGTALK_APP_SECRET",),
    "teams": ("KB_TEAMS_APP_PASSWORD",),
}

USER_MAP_DOC = doc("platform user id or e-mail -> kb user name")


@dataclass(frozen=True)
class SlackSettings:
    enabled: bool = field(default=False, metadata=doc("answer in Slack"))
    api_url: str = field(default="https://slack.com/api", metadata=doc("Slack's Web API"))
    user_map: dict[str, str] = field(default_factory=dict, metadata=USER_MAP_DOC)


@dataclass(frozen=True)
class FeishuSettings:
    enabled: bool = field(default=False, metadata=doc("answer in Feishu or Lark"))
    app_id: str = field(default="", metadata=doc("the app's App ID (cli_...)"))
    api_url: str = field(
        default="https://open.feishu.cn/open-apis",
        metadata=doc("Feishu's Open API; Lark: https://open.larksuite.com/open-apis"))
    user_map: dict[str, str] = field(default_factory=dict, metadata=USER_MAP_DOC)


@dataclass(frozen=True)
class WecomSettings:
    enabled: bool = field(default=False, metadata=doc("answer in WeCom (企业微信)"))
    corp_id: str = field(default="", metadata=doc("the company's CorpID"))
    agent_id: int = field(default=0, metadata=doc("the self-built app's AgentId"))
    api_url: str = field(default="https://qyapi.weixin.qq.com/cgi-bin",
                         metadata=doc("WeCom's server API"))
    user_map: dict[str, str] = field(default_factory=dict, metadata=USER_MAP_DOC)


@dataclass(frozen=True)
class DingtalkSettings:
    enabled: bool = field(default=False, metadata=doc("answer in DingTalk (钉钉)"))
    app_key: str = field(default="", metadata=doc("the app's AppKey (Client ID)"))
    api_url: str = field(default="https://oapi.dingtalk.com",
                         metadata=doc("DingTalk's server API; answers go only to session "
                                      "webhooks under it"))
    user_map: dict[str, str] = field(default_factory=dict, metadata=USER_MAP_DOC)


@dataclass(frozen=True)
class TeamsSettings:
    enabled: bool = field(default=False, metadata=doc("answer in Microsoft Teams"))
    app_id: str = field(default="", metadata=doc("the bot's Microsoft App ID (the tokens' "
                                                 "audience)"))
    openid_url: str = field(
        default="https://login.botframework.com/v1/.well-known/openidconfiguration",
        metadata=doc("Bot Framework's OpenID metadata: the issuer and keys of its tokens"))
    token_url: str = field(
        default="https://login.microsoftonline.com/botframework.com/oauth2/v2.0/token",
        metadata=doc("where the bot gets its own token; single-tenant: the tenant's"))
    user_map: dict[str, str] = field(default_factory=dict, metadata=USER_MAP_DOC)


UNMAPPED = ("base", "sign-in")
GROUP_CHATS = ("members", "asker")


@dataclass(frozen=True)
class ChannelsSettings:
    unmapped: str = field(
        default="base", metadata=doc('a platform user no kb user matches: "base" (auth.'
                                     'base_groups) or "sign-in" (a link to the page)'))
    group_chats: str = field(
        default="members", metadata=doc('"members": only passages every member may see; '
                                        '"asker": the asker\'s groups'))
    directory_filter: str = field(
        default="", metadata=doc("LDAP filter finding a platform user's e-mail, (mail={user}); "
                                 "empty: user_map only"))
    replay_window_s: float = field(
        default=300.0, metadata=doc("a signed callback older (or newer) than this is refused "
                                    "(DingTalk: its documented hour; Teams: its token's expiry)"))
    user_per_minute: int = field(default=10, metadata=doc("questions one person may ask a "
                                                          "minute"))
    chat_per_minute: int = field(default=30, metadata=doc("questions one chat may ask a minute"))
    slack: SlackSettings = field(default_factory=SlackSettings, metadata=doc("Slack"))
    feishu: FeishuSettings = field(default_factory=FeishuSettings, metadata=doc("Feishu/Lark"))
    wecom: WecomSettings = field(default_factory=WecomSettings, metadata=doc("WeCom"))
    dingtalk: DingtalkSettings = field(default_factory=DingtalkSettings,
                                       metadata=doc("DingTalk"))
    teams: TeamsSettings = field(default_factory=TeamsSettings, metadata=doc("Microsoft Teams"))
