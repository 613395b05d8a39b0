"""The st-memory-enhancement plugin's six default tables, as memoryhub table templates.

Pure code, no Django. Names, columns, notes and trigger texts are the plugin's own (`data/pluginSetting.js`
`tableStructure`; listed in docs/tables.md). Table 2's init/insert rules, which the plugin words as "same as
table 1", are spelled out here with the text the plugin's source uses. Rules the
plugin leaves empty are empty strings, so they are not rendered. `<user>` is replaced with the user's name
at render time (`render_tables(..., user_name=...)`), as the plugin does for its whole prompt.

The plugin has no row limits in code (only in prompt text), hence `maxRows: None` everywhere.
"""

from __future__ import annotations

import copy
from typing import Any

_SAME_AS_CHARACTERS_INIT = "本轮必须从上文寻找已知的所有角色使用insertRow插入，角色名不能为空"
_SAME_AS_CHARACTERS_INSERT = "当本轮出现表中没有的新角色时，应插入"


def _template(name: str, columns: list[str], note: str, *, required: bool, **rules: str) -> dict[str, Any]:
    return {
        "name": name,
        "columns": columns,
        "note": note,
        "rules": {key: rules.get(key, "") for key in ("init", "insert", "update", "delete")},
        "required": required,
        "maxRows": None,
    }


PLUGIN_DEFAULT_TABLES: list[dict[str, Any]] = [
    _template(
        "时空表格",
        ["日期", "时间", "地点（当前描写）", "此地角色"],
        "记录时空信息的表格，应保持在一行",
        required=True,
        init="本轮需要记录当前时间、地点、人物信息，使用insertRow函数",
        update="当描写的场景，时间，人物变更时",
        delete="此表大于一行时应删除多余行",
    ),
    _template(
        "角色特征表格",
        ["角色名", "身体特征", "性格", "职业", "爱好", "喜欢的事物（作品、虚拟人物、物品等）", "住所", "其他重要信息"],
        "角色天生或不易改变的特征csv表格，思考本轮有否有其中的角色，他应作出什么反应",
        required=True,
        init=_SAME_AS_CHARACTERS_INIT,
        insert=_SAME_AS_CHARACTERS_INSERT,
        update="当角色的身体出现持久性变化时，例如伤痕/当角色有新的爱好，职业，喜欢的事物时/当角色更换住所时/当角色提到重要信息时",
    ),
    _template(
        "角色与<user>社交表格",
        ["角色名", "对<user>关系", "对<user>态度", "对<user>好感"],
        "思考如果有角色和<user>互动，应什么态度",
        required=True,
        init=_SAME_AS_CHARACTERS_INIT,
        insert=_SAME_AS_CHARACTERS_INSERT,
        update="当角色和<user>的交互不再符合原有的记录时/当角色和<user>的关系改变时",
    ),
    _template(
        "任务、命令或者约定表格",
        ["角色", "任务", "地点", "持续时间"],
        "思考本轮是否应该执行任务/赴约",
        required=False,
        insert="当特定时间约定一起去做某事时/某角色收到做某事的命令或任务时",
        delete="当大家赴约时/任务或命令完成时/任务，命令或约定被取消时",
    ),
    _template(
        "重要事件历史表格",
        ["角色", "事件简述", "日期", "地点", "情绪"],
        "记录<user>或角色经历的重要事件",
        required=True,
        init="本轮必须从上文寻找可以插入的事件并使用insertRow插入",
        insert="当某个角色经历让自己印象深刻的事件时，比如表白、分手等",
    ),
    _template(
        "重要物品表格",
        ["拥有人", "物品描述", "物品名", "重要原因"],
        "对某人很贵重或有特殊纪念意义的物品",
        required=False,
        insert="当某人获得了贵重或有特殊意义的物品时/当某个已有物品有了特殊意义时",
    ),
]


def plugin_default_tables() -> list[dict[str, Any]]:
    """A fresh deep copy of PLUGIN_DEFAULT_TABLES, safe to edit and store."""
    return copy.deepcopy(PLUGIN_DEFAULT_TABLES)
