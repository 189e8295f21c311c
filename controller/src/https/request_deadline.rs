//! A request's body is read and its answer made within a deadline, or the client gets 408 and
//! the connection is closed (hyper does not keep a connection whose body was left unread).

use std::time::Duration;

use axum::Router;
use axum::extract::{Request, State};
use axum::http::{StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};

pub fn layer(app: Router, deadline: Duration) -> Router {
    app.layer(middleware::from_fn_with_state(deadline, within))
}

async fn within(State(deadline): State<Duration>, request: Request, next: Next) -> Response {
    match tokio::time::timeout(deadline, next.run(request)).await {
        Ok(response) => response,
        Err(_) => (
            StatusCode::REQUEST_TIMEOUT,
            [(header::CONNECTION, "close")],
            format!("the request was not received and answered within {deadline:?}\n"),
        )
            .into_response(),
    }
}
