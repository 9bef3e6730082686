"""The organisation pages in a real browser."""

from __future__ import annotations

import re

from playwright.sync_api import expect

from scheduler_core.models import Project, ProjectMembership
from tests import factories
from tests.console.browser.conftest import backend


def test_department_admin_creates_a_project_and_adds_a_member(live, cluster):
    backend(factories.user, "carol")
    page = live.page("dept-admin")
    page.click("nav >> text=Organisation")
    form = page.locator("#project-create")
    expect(form.locator("select[name=project-department]")).to_have_value(str(cluster["dept"].pk))
    form.locator("input[name=project-name]").fill("speech")
    form.locator("input[name=project-description]").fill("ASR models")
    form.locator("button[type=submit]").click()

    page.wait_for_url(re.compile(r"/org/project/\d+/$"))
    expect(page.locator("h1")).to_contain_text("speech")
    expect(page.locator("main")).to_contain_text("Created project speech.")

    members = page.locator("#member-form")
    members.locator("input[name=username]").fill("carol")
    members.locator("select[name=role]").select_option("researcher")
    members.locator("button[type=submit]").click()

    expect(page.locator('#members [data-member="carol"]')).to_contain_text("Researcher")
    speech = Project.objects.get(name="speech")
    assert speech.department == cluster["dept"]
    assert (
        ProjectMembership.objects.get(project=speech, user__username="carol").role == "researcher"
    )
