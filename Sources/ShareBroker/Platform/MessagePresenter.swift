/// Shows a message to the user on the app's behalf: AppConnect's `displayMessage:` development
/// aid, where the management client displays the authorization message while the app cannot.
public protocol MessagePresenter: Sendable {
    /// Displays `message`; returns whether it was shown.
    func display(_ message: String) -> Bool
}
