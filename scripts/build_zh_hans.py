"""Writes locale/zh_Hans/LC_MESSAGES/django.po (the console's Simplified Chinese) and compiles django.mo.

    .venv/bin/python scripts/build_zh_hans.py      # after changing a string; needs msgfmt (apt: gettext)

The .mo is committed, so a checkout needs no gettext to show the console in Chinese (docs/console.md).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent / "locale" / "zh_Hans" / "LC_MESSAGES"
HEADER = """# Simplified Chinese of the memoryhub operator console (built by scripts/build_zh_hans.py).
msgid ""
msgstr ""
"Project-Id-Version: memoryhub console\\n"
"MIME-Version: 1.0\\n"
"Content-Type: text/plain; charset=UTF-8\\n"
"Content-Transfer-Encoding: 8bit\\n"
"Language: zh_Hans\\n"
"Plural-Forms: nplurals=1; plural=0;\\n"

"""
MESSAGES = {
    # the dashboard (templates/console/dashboard.html, memories/console/dashboard.py)
    "No product yet: the dashboard appears once a product exists.": "还没有产品：创建产品后这里会显示仪表盘。",
    "Product": "产品",
    "Show": "显示",
    "Last 24 hours (since %(since)s UTC)": "最近 24 小时（自 %(since)s UTC 起）",
    "Turns per runtime": "各运行时的轮次",
    "Compare-and-set conflicts": "比较并设置（CAS）冲突",
    "Table edits: this product, 24 h. The others: the service's /metrics counter, every product, since the "
    "processes started.": "表格编辑：本产品，24 小时内。其余：服务 /metrics 计数器，全部产品，自进程启动以来。",
    "Failed Hinos memory writes": "失败的 Hinos 记忆写入",
    "Diary jobs": "日记任务",
    "Table jobs": "表格任务",
    "Admission refusals by reason": "按原因统计的记忆准入拒绝",
    "Search latency": "搜索延迟",
    "The /metrics histogram of long-term memory search, every product, since the processes started.": (
        "长期记忆搜索的 /metrics 直方图，全部产品，自进程启动以来。"
    ),
    "Failed jobs": "失败的任务",
    "Turn": "轮次",
    "Job": "任务",
    "Reason": "原因",
    "Re-run…": "重新运行…",
    "No failed job in the last 24 hours.": "最近 24 小时没有失败的任务。",
    "Hinos commit": "Hinos 提交",
    "Re-send…": "重新发送…",
    "none in the last 24 hours": "最近 24 小时没有记录",
    "table edits that lost twice (this product)": "两次竞争失败的表格编辑（本产品）",
    "failed commits": "失败的提交",
    "acknowledged since (re-sent)": "已确认（已重新发送）",
    "acknowledged since": "已确认",
    "awaiting a re-send": "等待重新发送",
    "failed": "失败",
    "pending": "进行中",
    "done: written": "完成：已写入",
    "skipped (not due)": "跳过（未到期）",
    "done: updated or unchanged": "完成：已更新或无变化",
    "skipped (reply replaced)": "跳过（回复已被替换）",
    "searches measured": "已测量的搜索次数",
    # the turn list (memories/admin/turns.py): headers, turn and memory-write states, the inspector link
    "user id": "用户 ID",
    "conversation id": "会话 ID",
    "round": "轮",
    "status": "状态",
    "scenario slug": "场景标识",
    "runtime": "运行时",
    "referenced variables": "引用的变量",
    "unreferenced variables": "未引用的变量",
    "memory write": "记忆写入",
    "created at": "创建时间",
    "inspector": "检查器",
    "product": "产品",
    "inspect": "检查",
    "prepared": "已准备",
    "completed": "已完成",
    "committed": "已提交",
    "superseded": "已被替换",
    "done": "完成",
    # list filters (memories/admin/filters.py, memories/hinos/admin_filters.py)
    "background job": "后台任务",
    "re-send state": "重新发送状态",
    # actions (memories/console/views.py, templates/console/confirm.html, the API key list)
    "Re-run a failed job": "重新运行失败的任务",
    "Schedule the failed %(work)s job of turn %(turn)s (round %(round)s) again?": (
        "重新调度轮次 %(turn)s（第 %(round)s 轮）失败的 %(work)s 任务？"
    ),
    "Re-send a failed Hinos commit": "重新发送失败的 Hinos 提交",
    "Send the Hinos commit of turn %(turn)s again, with the same claim id %(claim)s?": (
        "使用相同的 claim id %(claim)s 重新发送轮次 %(turn)s 的 Hinos 提交？"
    ),
    "Revoke an API key": "吊销 API 密钥",
    "Revoke the API key %(prefix)s… of %(product)s? Requests with it will answer 401.": (
        "吊销 %(product)s 的 API 密钥 %(prefix)s…？使用它的请求将返回 401。"
    ),
    "This key is already revoked.": "该密钥已被吊销。",
    "This is recorded in the admin's history, with your name.": "此操作会以你的名义记录在管理历史中。",
    "unknown job %(work)s": "未知的任务 %(work)s",
    "not scheduled": "未调度",
    "the %(work)s job of turn %(turn)s is %(state)s, not failed": (
        "轮次 %(turn)s 的 %(work)s 任务状态为 %(state)s，并未失败"
    ),
    "the table edits lost a version race twice and wrote nothing; re-applying them later could undo newer edits — "
    "edit the table by hand instead": (
        "这些表格编辑两次版本竞争失败，未写入任何内容；之后重新应用可能覆盖更新的编辑——请手动编辑表格"
    ),
    "turn %(turn)s: the %(work)s job is scheduled again (re-run %(number)s)": (
        "轮次 %(turn)s：%(work)s 任务已重新调度（第 %(number)s 次重新运行）"
    ),
    "key %(prefix)s… was already revoked": "密钥 %(prefix)s… 已被吊销",
    "key %(prefix)s… is revoked: requests with it now answer 401": "密钥 %(prefix)s… 已吊销：使用它的请求现在返回 401",
    "Back": "返回",
    "revoke": "吊销",
    "Revoke…": "吊销…",
    "Language": "语言",
    # the admin's app and model names (templates/admin/app_list.html translates them where they are listed)
    "Outbox": "发件箱",
    "Outbox messages": "发件箱消息",
    "Memories": "记忆",
    "Products": "产品",
    "API keys": "API 密钥",
    "Memory documents": "记忆文档",
    "Memory revisions": "记忆修订",
    "Run-once records": "一次性执行记录",
    "Scenarios": "场景",
    "Turns": "轮次",
    "Conversations": "会话",
    "Events": "事件",
    "Messages": "消息",
    "Long-term memories": "长期记忆",
    "Memory kinds": "记忆类型",
    "Long term memory versions": "长期记忆版本",
    "Admission refusals": "准入拒绝",
    "Embedding indexes": "嵌入索引",
    "Tasks": "任务",
    "Hinos": "Hinos",
    "Failed Hinos commits": "失败的 Hinos 提交",
    "Hinos claims": "Hinos 认领",
    "Compact history": "压缩历史",
    "Compactions": "压缩记录",
    "Conversation state": "会话状态",
    "Conversation states": "会话状态",
    "Conversation state revisions": "会话状态修订",
    "Story snapshots": "故事快照",
    "Story versions": "故事版本",
    "Data lifecycle": "数据生命周期",
    "Erasures": "删除请求",
    "Exports": "导出",
    "Retention settings": "保留设置",
    "Imports": "导入",
    "Webhooks": "Webhooks",
    "Webhook endpoints": "Webhook 端点",
    "Webhook deliveries": "Webhook 投递",
    "Webhook attempts": "Webhook 尝试",
    "Diaries": "日记",
    "Diary conversations": "日记会话",
    "Diary entries": "日记条目",
    "Diary plan records": "日记计划记录",
    "Memory tables": "记忆表格",
    "Table edit records": "表格编辑记录",
    "Memory table versions": "记忆表格版本",
    "Console": "控制台",
    # Django's own admin strings used on the console's pages (the same words as Django's catalogue)
    "Home": "首页",
    "Go": "执行",
    "Yes, I’m sure": "是的，我确定",
    "No, take me back": "不，返回",
}


def quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def main() -> None:
    HERE.mkdir(parents=True, exist_ok=True)
    body = "".join(f"msgid {quote(k)}\nmsgstr {quote(v)}\n\n" for k, v in MESSAGES.items())
    po = HERE / "django.po"
    po.write_text(HEADER + body, encoding="utf-8")
    subprocess.run(["msgfmt", "--check", "-o", str(HERE / "django.mo"), str(po)], check=True)


if __name__ == "__main__":
    main()
