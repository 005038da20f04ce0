//! The kit's own error type.

/// Why [`GrpcServer::serve`](crate::server::GrpcServer::serve) failed.
#[derive(Debug, thiserror::Error)]
pub enum KitError {
    /// The reflection service could not be built from the embedded descriptor sets
    /// (a corrupt `FILE_DESCRIPTOR_SET`; a build problem, not a runtime one).
    #[error("building the gRPC reflection service: {0}")]
    Reflection(#[from] tonic_reflection::server::Error),
    /// The listener's address could not be read, or the health address not bound.
    #[error("the listener: {0}")]
    Listener(#[source] std::io::Error),
    /// The HTTP/2 server failed while accepting or serving connections.
    #[error("serving gRPC: {0}")]
    Transport(#[from] tonic::transport::Error),
}
