//! The admission webhooks as a user meets them: creations and updates that are tried (and may
//! be refused with a field path), and a user whose Role limits what an AppWrapper may wrap.

use super::outcome::Outcome;
use std::time::Duration;

use anyhow::Context as _;
use clusters::webhook_retry;
use cucumber::{given, then, when};
use k8s_openapi::api::authorization::v1::SubjectAccessReview;
use k8s_openapi::api::rbac::v1::{Role, RoleBinding};
use kube::api::{Api, DynamicObject, PostParams};
use serde_json::{Value, json};

use super::secs;
use crate::parameters::{Quoted, Subject, Whose};
use crate::wait::{self, Check};
use crate::world::{Attempt, AwWorld};

fn outcome(result: Result<(), kube::Error>) -> anyhow::Result<Attempt> {
    match result {
        Ok(()) => Ok(Attempt::Accepted),
        Err(kube::Error::Api(status)) => Ok(Attempt::Refused(status)),
        Err(e) => Err(e.into()),
    }
}

/// Creates the defined AppWrapper as it is (no queue), as `client`'s user.
async fn try_create(
    w: &mut AwWorld,
    subject: &Subject,
    client: kube::Client,
    who: &str,
) -> anyhow::Result<()> {
    let name = w.select(subject)?;
    let mut aw = w
        .drafts
        .remove(&name)
        .with_context(|| format!("AppWrapper {name} was not defined (or was already submitted)"))?;
    aw["metadata"]["namespace"] = json!(w.ns);
    let object: DynamicObject = serde_json::from_value(aw)?;
    let api = objects::appwrappers(&client, &w.ns);
    let params = PostParams::default();
    let result = webhook_retry::write(&w.ns, || api.create(&params, &object))
        .await
        .map(|_| ());
    let attempt = outcome(result)?;
    if let Attempt::Accepted = attempt {
        w.submitted.push(name.clone());
    }
    w.note(format!(
        "{who} tried to create AppWrapper {name}: {attempt:?}"
    ));
    w.attempt = Some(attempt);
    Ok(())
}

#[when(expr = "I try to create {subject}")]
async fn i_try_to_create(w: &mut AwWorld, subject: Subject) -> Outcome {
    let client = w.client.clone();
    Ok(try_create(w, &subject, client, "the admin").await?)
}

#[when(expr = "{quoted} tries to create {subject}")]
async fn user_tries_to_create(w: &mut AwWorld, user: Quoted, subject: Subject) -> Outcome {
    let client = impersonating(w, &user).await?;
    Ok(try_create(w, &subject, client, &user).await?)
}

/// A client of the suite's admin acting as `user` (an authenticated user of no group).
async fn impersonating(w: &AwWorld, user: &str) -> anyhow::Result<kube::Client> {
    let kubeconfig = kube::config::Kubeconfig::read_from(w.kubeconfig())?;
    let mut config = kube::Config::from_custom_kubeconfig(
        kubeconfig,
        &kube::config::KubeConfigOptions::default(),
    )
    .await?;
    config.auth_info.impersonate = Some(user.to_owned());
    config.auth_info.impersonate_groups = Some(vec!["system:authenticated".to_owned()]);
    config.read_timeout = Some(Duration::from_secs(30));
    Ok(kube::Client::try_from(config)?)
}

/// A Role in the scenario's namespace allowing Pods and AppWrappers but only reading
/// Deployments, bound to `user`.
#[given(regex = r#"^a user "([^"]+)" who may create Pods but not Deployments$"#)]
async fn limited_user(w: &mut AwWorld, user: String) -> Outcome {
    let role: Role = serde_json::from_value(json!({
        "metadata": {"name": "pods-only"},
        "rules": [
            {"apiGroups": [""], "resources": ["pods"], "verbs": ["*"]},
            {"apiGroups": ["workload.codeflare.dev"], "resources": ["appwrappers"], "verbs": ["*"]},
            {"apiGroups": ["apps"], "resources": ["deployments"], "verbs": ["get", "list", "watch"]},
        ],
    }))?;
    let binding: RoleBinding = serde_json::from_value(json!({
        "metadata": {"name": "pods-only"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "pods-only"},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user}],
    }))?;
    let params = PostParams::default();
    Api::<Role>::namespaced(w.client.clone(), &w.ns)
        .create(&params, &role)
        .await
        .context("creating the Role")?;
    Api::<RoleBinding>::namespaced(w.client.clone(), &w.ns)
        .create(&params, &binding)
        .await
        .context("binding the Role")?;
    // The API server's RBAC authorizer learns of the binding from its informers, a moment
    // after the create returns; the step is done when it answers as the Role says.
    for resource in ["appwrappers", "pods"] {
        let (client, ns, user) = (&w.client, w.ns.as_str(), user.as_str());
        wait::eventually(
            Duration::from_secs(30),
            &format!("the API server to let {user} create {resource}"),
            move || async move {
                Ok(if may_create(client, ns, user, resource).await? {
                    Check::Done(())
                } else {
                    Check::NotYet("not allowed yet".to_string())
                })
            },
        )
        .await?;
    }
    w.note(format!("user {user} may create Pods but not Deployments"));
    Ok(())
}

async fn may_create(
    client: &kube::Client,
    ns: &str,
    user: &str,
    resource: &str,
) -> anyhow::Result<bool> {
    let group = if resource == "appwrappers" {
        "workload.codeflare.dev"
    } else {
        ""
    };
    let review: SubjectAccessReview = serde_json::from_value(json!({
        "spec": {
            "user": user,
            "groups": ["system:authenticated"],
            "resourceAttributes": {"namespace": ns, "verb": "create", "group": group, "resource": resource},
        },
    }))?;
    let answer = Api::<SubjectAccessReview>::all(client.clone())
        .create(&PostParams::default(), &review)
        .await
        .context("asking the API server what the user may do")?;
    Ok(answer.status.is_some_and(|s| s.allowed))
}

/// One step of a field path as the API server writes it: `a.b[0].c[some/key]`.
#[derive(Debug, PartialEq)]
enum Segment {
    Key(String),
    Index(usize),
}

fn parse_path(path: &str) -> anyhow::Result<Vec<Segment>> {
    let mut segments = Vec::new();
    let mut rest = path;
    while !rest.is_empty() {
        rest = rest.strip_prefix('.').unwrap_or(rest);
        if let Some(inner) = rest.strip_prefix('[') {
            let (key, after) = inner
                .split_once(']')
                .with_context(|| format!("unclosed [ in {path:?}"))?;
            segments.push(match key.parse() {
                Ok(i) => Segment::Index(i),
                Err(_) => Segment::Key(key.to_owned()),
            });
            rest = after;
        } else {
            let end = rest.find(['.', '[']).unwrap_or(rest.len());
            segments.push(Segment::Key(rest[..end].to_owned()));
            rest = &rest[end..];
        }
    }
    Ok(segments)
}

fn set_at(object: &mut Value, path: &[Segment], value: Value) -> anyhow::Result<()> {
    let mut here = object;
    let mut at = String::new();
    for segment in path {
        at.push_str(&format!(" {segment:?}"));
        here = match segment {
            Segment::Key(key) => {
                if !here.is_object() {
                    *here = json!({});
                }
                &mut here[key.as_str()]
            }
            Segment::Index(i) => here
                .get_mut(*i)
                .with_context(|| format!("nothing at{at}"))?,
        };
    }
    *here = value;
    Ok(())
}

/// Reads the AppWrapper, sets one field and writes it back (retrying lost races with the
/// controller); the outcome is the webhook's answer.
#[when(expr = "I try to set {whose} {word} to {}")]
async fn try_to_set(w: &mut AwWorld, subject: Whose, path: String, value: String) -> Outcome {
    let name = w.select(&subject)?;
    let segments = parse_path(&path)?;
    let value = crate::yaml::parse(&value)?;
    let api = objects::appwrappers(&w.client, &w.ns);
    let (api, name_ref, segments, value) = (&api, name.as_str(), &segments, &value);
    let ns = w.ns.as_str();
    let attempt = wait::eventually(
        secs(30),
        &format!("an update of {path}"),
        move || async move {
            let mut aw = objects::to_value(&api.get(name_ref).await?);
            set_at(&mut aw, segments, value.clone())?;
            let object: DynamicObject = serde_json::from_value(aw)?;
            let params = PostParams::default();
            let replace = || api.replace(name_ref, &params, &object);
            Ok(match webhook_retry::write(ns, replace).await {
                Err(kube::Error::Api(status)) if status.code == 409 => {
                    Check::NotYet(format!("conflict: {}", status.message))
                }
                result => Check::Done(outcome(result.map(|_| ()))?),
            })
        },
    )
    .await?;
    w.note(format!("tried to set {path} of {name}: {attempt:?}"));
    w.attempt = Some(attempt);
    Ok(())
}

#[then(expr = "{subject} is refused with {quoted} at {quoted}")]
async fn refused(w: &mut AwWorld, _subject: Subject, message: Quoted, field: Quoted) -> Outcome {
    let status = match &w.attempt {
        Some(Attempt::Refused(status)) => status,
        Some(Attempt::Accepted) => crate::fail!("it was accepted"),
        None => crate::fail!("nothing was tried yet"),
    };
    // Both implementations answer as controller-runtime's `admission.Denied` does: 403
    // `Forbidden`, the field named only in the message (`<field>: <Type>: <detail>`).
    let found = status.code == 403
        && status.reason == "Forbidden"
        && status.message.contains(message.as_str())
        && status.message.contains(&format!("{field}: "));
    crate::require!(
        found,
        "expected a 403 Forbidden refusal with {message:?} at {field:?}, got {} {}: {}",
        status.code,
        status.reason,
        status.message
    );
    Ok(())
}

#[then(expr = "{subject} is accepted")]
async fn accepted(w: &mut AwWorld, _subject: Subject) -> Outcome {
    match &w.attempt {
        Some(Attempt::Accepted) => Ok(()),
        Some(Attempt::Refused(status)) => crate::fail!("it was refused: {}", status.message),
        None => crate::fail!("nothing was tried yet"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn field_paths_are_parsed_like_the_api_server_writes_them() {
        assert_eq!(
            parse_path("spec.components[0].podSets[1].replicas").unwrap(),
            [
                Segment::Key("spec".into()),
                Segment::Key("components".into()),
                Segment::Index(0),
                Segment::Key("podSets".into()),
                Segment::Index(1),
                Segment::Key("replicas".into()),
            ]
        );
        let mut aw = json!({"metadata": {"labels": {}}});
        let path = parse_path("metadata.labels[workload.codeflare.dev/user]").unwrap();
        set_at(&mut aw, &path, json!("x")).unwrap();
        assert_eq!(aw["metadata"]["labels"]["workload.codeflare.dev/user"], "x");
    }
}
