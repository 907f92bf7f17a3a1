"""Demo scenarios without a workspace (no cwd): general questions."""

from __future__ import annotations

from worker.devtools.demo_corpus.model import (
    Scenario,
    Step,
    Turn,
)

NOCWD_GIT = Scenario(
    key="nocwd-git-rebase",
    cwd=None,
    lang="zh",
    title="解释 git rebase 和 merge 的区别",
    turns=(
        Turn(
            user="解释一下 git rebase 和 git merge 的区别，什么时候应该用 rebase？",
            steps=(
                Step(
                    say=(
                        "merge 会生成一个合并提交，保留两条分支的真实历史；rebase 把你的提交在目标"
                        "分支的最新提交之上逐个重放，得到一条线性的历史。\n\n"
                        "建议：本地、还没推送的功能分支用 rebase 同步主干；已经共享的分支用 merge，"
                        "避免改写别人依赖的历史。"
                    )
                ),
            ),
        ),
        Turn(
            user="如果已经 push 了的分支要 rebase 怎么办？",
            steps=(
                Step(
                    say=(
                        "rebase 之后用 `git push --force-with-lease` 推送：只有远端分支仍然是你上次"
                        "看到的位置时才会覆盖，能避免误删同事的新提交。推送前先通知协作者，"
                        "让他们用 `git pull --rebase` 同步。"
                    )
                ),
            ),
        ),
    ),
)

NOCWD_REGEX = Scenario(
    key="nocwd-semver-regex",
    cwd=None,
    lang="en",
    title="Regex to validate semantic version strings",
    turns=(
        Turn(
            user="Give me a regex that validates semantic version strings including "
            "pre-release and build metadata.",
            steps=(
                Step(
                    say=(
                        "The official SemVer 2.0.0 pattern:\n\n"
                        "^(0|[1-9]\\d*)\\.(0|[1-9]\\d*)\\.(0|[1-9]\\d*)"
                        "(?:-((?:0|[1-9]\\d*|\\d*[a-zA-Z-][0-9a-zA-Z-]*)"
                        "(?:\\.(?:0|[1-9]\\d*|\\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?"
                        "(?:\\+([0-9a-zA-Z-]+(?:\\.[0-9a-zA-Z-]+)*))?$\n\n"
                        "It rejects leading zeros such as 01.2.3."
                    )
                ),
            ),
        ),
    ),
)
